"""Brute-force references for the DMV: enumerate every projective single-root tree."""
import functools
import itertools

import numpy as np


def _is_tree(heads):
    """heads: 1-based, 0 = root. True for a single-root tree (no cycles)."""
    n = len(heads)
    if sum(1 for h in heads if h == 0) != 1:
        return False
    for start in range(1, n + 1):
        node, steps = start, 0
        while node != 0:
            node = heads[node - 1]
            steps += 1
            if steps > n:
                return False
    return True


def _is_projective(heads):
    """Every word strictly between a head and its dependent descends from that head."""
    n = len(heads)

    def descends(node, ancestor):
        while node != 0:
            if node == ancestor:
                return True
            node = heads[node - 1]
        return False

    for dep in range(1, n + 1):
        head = heads[dep - 1]
        if head == 0:
            continue
        lo, hi = min(head, dep), max(head, dep)
        if not all(descends(k, head) for k in range(lo + 1, hi)):
            return False
    return True


@functools.lru_cache(maxsize=None)
def projective_trees(n):
    """All projective single-root trees over n words, as tuples of 1-based heads."""
    return tuple(h for h in itertools.product(range(n + 1), repeat=n) if _is_tree(h) and _is_projective(h))


def tree_log_weight(tags, heads, log_root, log_stop, log_attach):
    """log weight of a tree, straight from the DMV's story (Klein and Manning 2004).

    Each head generates its dependents on each side innermost first: before
    each one a CONTINUE decision (valence 0 before the first, 1 after), then
    the dependent's type; finally a STOP decision at the valence reached.
    """
    n = len(tags)
    total = 0.0
    for m in range(n):
        if heads[m] == 0:
            total += log_root[tags[m]]
    for h in range(n):
        for side in (0, 1):
            if side == 0:
                deps = [m for m in range(h - 1, -1, -1) if heads[m] == h + 1]
            else:
                deps = [m for m in range(h + 1, n) if heads[m] == h + 1]
            for k, m in enumerate(deps):
                total += log_stop[tags[h], side, min(k, 1), 1] + log_attach[tags[h], side, tags[m]]
            total += log_stop[tags[h], side, min(len(deps), 1), 0]
    return total


def tree_counts(tags, heads, n_types):
    """Counts (root, stop, attach) of one tree, from the same story."""
    root = np.zeros(n_types)
    stop = np.zeros((n_types, 2, 2, 2))
    attach = np.zeros((n_types, 2, n_types))
    n = len(tags)
    for m in range(n):
        if heads[m] == 0:
            root[tags[m]] += 1
    for h in range(n):
        for side in (0, 1):
            deps = [m for m in (range(h) if side == 0 else range(h + 1, n)) if heads[m] == h + 1]
            for k, m in enumerate(deps):
                stop[tags[h], side, min(k, 1), 1] += 1
                attach[tags[h], side, tags[m]] += 1
            stop[tags[h], side, min(len(deps), 1), 0] += 1
    return root, stop, attach


def exact_posterior(tags, log_root, log_stop, log_attach):
    """log Z, the trees, their probabilities, the expected counts and the best tree."""
    n_types = log_root.shape[0]
    trees = projective_trees(len(tags))
    log_w = np.array([tree_log_weight(tags, t, log_root, log_stop, log_attach) for t in trees])
    top = log_w.max()
    log_z = top + np.log(np.exp(log_w - top).sum())
    prob = np.exp(log_w - log_z)
    root = np.zeros(n_types)
    stop = np.zeros((n_types, 2, 2, 2))
    attach = np.zeros((n_types, 2, n_types))
    head_marginals = np.zeros((len(tags), len(tags) + 1))
    for p, t in zip(prob, trees):
        r, s, a = tree_counts(tags, t, n_types)
        root += p * r
        stop += p * s
        attach += p * a
        for m, h in enumerate(t):
            head_marginals[m, h] += p
    best = np.array(trees[int(np.argmax(log_w))])
    return log_z, trees, prob, (root, stop, attach), head_marginals, best
