"""Brute-force references: enumerate every state path of tiny models."""
import itertools

import numpy as np
from scipy.special import gammaln


def chain_posterior(start, trans, lik):
    """Exact log Z, marginals (T, K) and expected transition counts (K, K) of one chain."""
    n_steps, n_states = lik.shape
    z_total = 0.0
    marginals = np.zeros((n_steps, n_states))
    pairs = np.zeros((n_states, n_states))
    for path in itertools.product(range(n_states), repeat=n_steps):
        p = start[path[0]] * lik[0, path[0]]
        for t in range(1, n_steps):
            p *= trans[path[t - 1], path[t]] * lik[t, path[t]]
        z_total += p
        for t in range(n_steps):
            marginals[t, path[t]] += p
        for t in range(1, n_steps):
            pairs[path[t - 1], path[t]] += p
    return np.log(z_total), marginals / z_total, pairs / z_total


def best_path(start, trans, lik):
    """The highest-probability path and its probability."""
    n_steps, n_states = lik.shape
    best, best_p = None, -1.0
    for path in itertools.product(range(n_states), repeat=n_steps):
        p = start[path[0]] * lik[0, path[0]]
        for t in range(1, n_steps):
            p *= trans[path[t - 1], path[t]] * lik[t, path[t]]
        if p > best_p:
            best, best_p = path, p
    return np.array(best), best_p


def corpus_expectations(start, trans, emission, sequences):
    """Exact expected (start, trans, emission (K, W)) counts and log-likelihood of a corpus."""
    n_states, n_symbols = emission.shape
    start_c = np.zeros(n_states)
    trans_c = np.zeros((n_states, n_states))
    emit_c = np.zeros((n_states, n_symbols))
    log_lik = 0.0
    for x in sequences:
        log_z, marg, pairs = chain_posterior(start, trans, emission[:, x].T)
        log_lik += log_z
        start_c += marg[0]
        trans_c += pairs
        for t, w in enumerate(x):
            emit_c[:, w] += marg[t]
    return start_c, trans_c, emit_c, log_lik


def counts_without(sequence, own, own_pairs, start_c, trans_c, stats):
    """Everyone else's expected (start, trans, emission (K, W)) counts: the totals minus one sequence's
    own marginals ``own`` (T, K) and pair counts ``own_pairs``; ``stats`` holds the emission counts as
    (W + 1, K) rows (the last row the state totals), as the kernels keep them."""
    other_emit = stats[:-1].T.copy()
    for t, w in enumerate(sequence):
        other_emit[:, w] -= own[t]
    return start_c - own[0], trans_c - own_pairs, other_emit


def collapsed_log_joint(states, sequences, n_states, n_symbols, alpha, beta):
    """log p(x, z | alpha, beta) with every parameter integrated out (eq. 3.24)."""
    start_c = np.zeros(n_states)
    trans_c = np.zeros((n_states, n_states))
    emit_c = np.zeros((n_states, n_symbols))
    pos = 0
    for x in sequences:
        z = states[pos:pos + len(x)]
        pos += len(x)
        start_c[z[0]] += 1
        for t in range(1, len(x)):
            trans_c[z[t - 1], z[t]] += 1
        for t, w in enumerate(x):
            emit_c[z[t], w] += 1

    def rows(counts, prior):
        width = counts.shape[-1]
        return ((gammaln(width * prior) - gammaln(width * prior + counts.sum(-1))).sum()
                + (gammaln(counts + prior) - gammaln(prior)).sum())

    return rows(start_c[None], alpha) + rows(trans_c, alpha) + rows(emit_c, beta)


def guarded_posterior(left_belief, left_counts, theta_bar, phi_rows, right_counts, right_belief, alpha,
                      prior_total=None):
    """Enumerate q2(z0, z_1..z_T, z_{T+1}) of eq. 3.71 with the potentials exactly as
    written in eq. 3.72-3.76 (including the alpha / (K q) terms).

    ``alpha`` is a scalar or, for the HDP-HMM's surrogate (eq. 5.38), a row of
    per-target-state priors a_k with the denominator total ``prior_total``.

    Returns the marginals of z_1..z_T (T, K), the internal expected transitions
    (K, K), the guard pairs q2(z0, z1) and q2(z_T, z_{T+1}), and the
    unnormalised q(z^i) of eq. 3.70 for every path (dict path -> weight) after
    summing out the guards.
    """
    n_steps, n_states = phi_rows.shape
    alpha = np.broadcast_to(np.asarray(alpha, dtype=float), (n_states,))
    k_alpha = alpha.sum() if prior_total is None else prior_total
    joint = {}
    for path in itertools.product(range(n_states), repeat=n_steps + 2):
        z0, inner, z_end = path[0], path[1:-1], path[-1]
        p = left_belief[z0]                                                    # f_0, eq. 3.72
        p *= (left_counts[z0, inner[0]] + alpha[inner[0]] / (n_states * left_belief[z0])) * phi_rows[0, inner[0]]  # 3.73
        for t in range(1, n_steps):
            p *= theta_bar[inner[t - 1], inner[t]] * phi_rows[t, inner[t]]      # 3.74
        p *= ((right_counts[inner[-1], z_end] + alpha[z_end] / (n_states * right_belief[z_end]))
              / (right_counts[inner[-1]].sum() + k_alpha))                      # 3.75
        p *= right_belief[z_end]                                                # 3.76
        joint[path] = p
    total = sum(joint.values())
    marginals = np.zeros((n_steps, n_states))
    pairs = np.zeros((n_states, n_states))
    left_pairs = np.zeros((n_states, n_states))
    right_pairs = np.zeros((n_states, n_states))
    summed_out = {}
    for path, p in joint.items():
        p /= total
        inner = path[1:-1]
        for t in range(n_steps):
            marginals[t, inner[t]] += p
        for t in range(1, n_steps):
            pairs[inner[t - 1], inner[t]] += p
        left_pairs[path[0], inner[0]] += p
        right_pairs[inner[-1], path[-1]] += p
        summed_out[inner] = summed_out.get(inner, 0.0) + p
    return marginals, pairs, left_pairs, right_pairs, summed_out


def unit_paths(entry, stay, leave, lik, n_states, start=None):
    """Every path of a chain of units (cvbayes.chains.composite) with its probability: a list of
    (composite states, unit starts, probability) over an utterance of lik.shape[0] frames; ``start[t]``
    (default 1) multiplies a path on which a unit begins at frame t > 0."""
    n_steps, n_composite = lik.shape
    start = np.ones(n_steps) if start is None else start
    n_units = n_composite // n_states
    paths = []

    def extend(states, starts, p):
        t = len(states)
        c = states[-1]
        if t == n_steps:
            if c % n_states == n_states - 1:
                paths.append((tuple(states), tuple(starts), p * leave[c]))
            return
        extend(states + [c], starts + [False], p * stay[c] * lik[t, c])
        if c % n_states < n_states - 1:
            extend(states + [c + 1], starts + [False], p * leave[c] * lik[t, c + 1])
        else:
            for u in range(n_units):
                extend(states + [u * n_states], starts + [True],
                       p * leave[c] * start[t] * entry[u] * lik[t, u * n_states])

    for u in range(n_units):
        extend([u * n_states], [True], entry[u] * lik[0, u * n_states])
    return paths


def unit_posterior(entry, stay, leave, lik, n_states, start=None):
    """Exact log Z, marginals (T, U S) and expected unit occurrences (U,) of a chain of units."""
    paths = [path for path in unit_paths(entry, stay, leave, lik, n_states, start) if path[2] > 0]
    total = sum(p for _, _, p in paths)
    marginals = np.zeros(lik.shape)
    counts = np.zeros(lik.shape[1] // n_states)
    for states, starts, p in paths:
        for t, (c, start) in enumerate(zip(states, starts)):
            marginals[t, c] += p / total
            if start:
                counts[c // n_states] += p / total
    return np.log(total), marginals, counts
