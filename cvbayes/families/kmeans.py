"""Weighted k-means with k-means++ seeding: the emission families' spread-out random starts (issue 15)."""
from __future__ import annotations

import numpy as np
from scipy import sparse


def _dense_rows(points, rows):
    chosen = points[rows]
    return chosen.toarray() if sparse.issparse(chosen) else np.asarray(chosen, dtype=float)


def weighted_kmeans(points, weights, n_clusters, rng, lloyd_steps=30):
    """Cluster ``points`` (an (n, d) array or CSR matrix) with k-means++ seeding and Lloyd steps.

    Greedy k-means++ seeding (Arthur and Vassilvitskii 2007; the greedy form scikit-learn uses): for
    each next centre, 2 + log k candidate points are drawn with probability proportional to their
    weight times their squared distance from the nearest centre so far, and the candidate that
    leaves the smallest weighted sum of squared distances is kept (plain k-means++ often puts two
    centres in one cluster and one between two); then steps of weighted k-means, until no point
    changes cluster or ``lloyd_steps`` are done, move each centre to the weighted mean of its points
    (a centre left without points stays where it is). Returns (centres (k, d), cluster of each point,
    total weight of each cluster).
    """
    weights = np.asarray(weights, dtype=float)
    n_points = weights.shape[0]
    squared_norms = (np.asarray(points.multiply(points).sum(axis=1)).ravel() if sparse.issparse(points)
                     else (points ** 2).sum(axis=1))

    def squared_distances(centres):
        return np.maximum(squared_norms[:, None] - 2.0 * np.asarray(points @ centres.T)
                          + (centres ** 2).sum(axis=1)[None], 0.0)

    n_trials = 2 + int(np.log(n_clusters))
    centres = np.zeros((n_clusters, points.shape[1]))
    nearest = np.ones(n_points)
    for k in range(n_clusters):
        chance = weights * nearest
        # every point already sits on a centre (fewer distinct points than clusters): draw by weight
        chance = chance if chance.sum() > 0 else weights
        candidates = rng.choice(n_points, size=n_trials, p=chance / chance.sum())
        rows = _dense_rows(points, candidates)
        after = np.minimum(nearest[:, None], squared_distances(rows))
        best = int(np.argmin(weights @ after))
        centres[k] = rows[best]
        nearest = after[:, best]
    cluster = None
    for _ in range(lloyd_steps + 1):
        previous, cluster = cluster, squared_distances(centres).argmin(axis=1)
        if previous is not None and np.array_equal(previous, cluster):
            break
        members = sparse.csr_matrix((weights, (cluster, np.arange(n_points))), shape=(n_clusters, n_points))
        size = np.asarray(members.sum(axis=1)).ravel()
        summed = members @ points
        summed = summed.toarray() if sparse.issparse(summed) else np.asarray(summed)
        centres = np.where(size[:, None] > 0, summed / np.maximum(size, 1.0)[:, None], centres)
    return centres, cluster, size
