"""Beam sampling for the HDP-HMM (Van Gael, Saatci, Teh and Ghahramani, 2008).

The benchmark of thesis §5.5.1 (Fig. 5.7) and §5.5.2.  The model is the
HDP-HMM of eq. 5.1-5.9: a top-level stick ``pi ~ GEM(gamma)``, transition rows
``theta_j ~ DP(sigma, pi)`` for j = 0 (the start row) and every state j >= 1,
emission parameters ``phi_k ~ H`` (Dirichlet(beta) over W symbols, or a
Normal-Gamma prior on a diagonal Gaussian).

One iteration, given the state sequence z and the current stick pi:

1. table counts ``m_jk`` (Antoniak: seat ``n_jk`` customers with concentration
   ``sigma * pi_k``; the auxiliary variables of eq. 5.11-5.12) and then
   ``(pi_1..pi_K, pi_rest) ~ Dir(m_.1, ..., m_.K, gamma)``;
2. ``theta_j ~ Dir(sigma pi_1 + n_j1, ..., sigma pi_K + n_jK, sigma pi_rest)``
   for j = 0..K and ``phi_k`` from its conjugate posterior;
3. slice variables ``u_t ~ U(0, theta_{z_{t-1}, z_t})``;
4. new states are broken off ``pi_rest`` (with their transition rows drawn from
   DP(sigma, pi) and their emissions from the prior) until every row's mass on
   the states not yet represented is below ``min_t u_t``;
5. forward filtering over the transitions with ``theta_jk > u_t`` only, then
   backward sampling of z (numba, parallel over sequences);
6. unused states are dropped (their stick mass returns to ``pi_rest``) and the
   states relabelled by decreasing occupancy.

Steps 1-2 draw (pi, theta, phi) from p(. | z) with theta and phi integrated
out for pi, step 3 draws u from p(u | z, theta), and step 5 draws z from
p(z | u, theta, phi, x), in which the slice factor 1[u_t < theta] / theta
times theta leaves the indicator alone (Van Gael et al. 2008, eq. 3).

All random numbers come from one ``numpy.random.Generator``; the numba kernels
receive pre-drawn uniforms, so a run is reproducible for a fixed seed whatever
the number of threads.
"""
import time
from dataclasses import dataclass, field

import numpy as np
from numba import njit, prange
from scipy.special import expit, gammaln

from .hdp import effective_states
from .sweeps import equal_token_chunks

# Largest number of instantiated states before the extension step gives up
# (only reached with a huge gamma or a pathological slice).
MAX_STATES = 100_000
# Below this many tokens the forward-filter backward-sampler runs on one thread.
PARALLEL_MIN_TOKENS = 50_000
_TINY = np.finfo(float).tiny


@dataclass
class BeamResult:
    """Outcome of :func:`beam_sample`.

    Attributes
    ----------
    states : ndarray (N,) int32
        The last sample of z, labels 0..K-1 by decreasing occupancy.
    history : list of dict
        One entry per iteration: ``iteration`` (1-based), ``n_states`` (states
        the sample occupies), ``n_instantiated`` (states represented during
        the sweep, after the slice extension), ``n_effective`` (fewest states
        covering 99 % of the tokens), ``log_joint`` (log p(x, z | pi) with
        theta and phi integrated out: eq. 5.10 times the emission marginal),
        ``seconds`` (wall time of that iteration).
    startprob_ : ndarray (K,)
        E[theta_0 | z, pi] restricted to the K occupied states and renormalised.
    transmat_ : ndarray (K, K)
        E[theta_j | z, pi] = (sigma pi_k + n_jk) / (sigma + n_j.), restricted to
        the occupied states and renormalised row by row.
    emissionprob_ : ndarray (K, W) or None
        Posterior mean of phi (categorical).
    means_, variances_ : ndarray (K, D) or None
        Posterior mean of mu and 1 / E[tau] (Gaussian).
    top_level_ : ndarray (K + 1,)
        The stick pi of the last iteration: occupied states, then the rest mass.
    """

    states: np.ndarray
    history: list = field(default_factory=list)
    startprob_: np.ndarray = None
    transmat_: np.ndarray = None
    emissionprob_: np.ndarray = None
    means_: np.ndarray = None
    variances_: np.ndarray = None
    top_level_: np.ndarray = None

    @property
    def n_states(self):
        """States occupied by the last sample."""
        return int(self.transmat_.shape[0])

    @property
    def n_iter(self):
        """Iterations run (fewer than asked when the callback stopped early)."""
        return len(self.history)


# --------------------------------------------------------------------------------------------
# random draws in log space (sigma * pi_k can be far below 1e-300)


def logsumexp(values, axis=None, keepdims=False):
    """log sum exp (scipy's is slow on the small arrays drawn here every iteration)."""
    values = np.asarray(values, dtype=float)
    top = np.max(values, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    out = np.log(np.sum(np.exp(values - top), axis=axis, keepdims=True)) + top
    return out if keepdims else (np.squeeze(out, axis=axis) if axis is not None else out.item())


def _log_gamma_draws(rng, shape):
    """log of Gamma(shape, 1) draws, exact for tiny shapes.

    For shape < 1 uses G = G' U^(1/shape) with G' ~ Gamma(shape + 1), kept in
    logs so that draws below the float range stay finite.
    """
    shape = np.maximum(np.asarray(shape, dtype=float), _TINY)
    small = shape < 1.0
    draws = np.log(rng.standard_gamma(np.where(small, shape + 1.0, shape)))
    log_u = np.log1p(-rng.random(shape.shape))  # log of U in (0, 1]
    with np.errstate(over="ignore"):  # log_u / shape -> -inf for shapes near 1e-308
        return np.where(small, draws + log_u / shape, draws)


def _log_dirichlet(rng, alpha):
    """log of Dirichlet draws, one per row of ``alpha`` (last axis)."""
    logs = _log_gamma_draws(rng, alpha)
    return logs - logsumexp(logs, axis=-1, keepdims=True)


# --------------------------------------------------------------------------------------------
# numba kernels


@njit(cache=True)
def _transition_counts(states, offsets, n_states):
    """n (K+1, K): row 0 counts first states, row j+1 transitions out of state j."""
    counts = np.zeros((n_states + 1, n_states), dtype=np.int64)
    for i in range(offsets.shape[0] - 1):
        prev = 0
        for t in range(offsets[i], offsets[i + 1]):
            k = states[t]
            counts[prev, k] += 1
            prev = k + 1
    return counts


@njit(cache=True)
def _table_counts(counts, concentration, uniforms):
    """Antoniak draws: tables among n_jk customers with concentration sigma pi_k.

    Customer i (0-based) opens a new table with probability a / (a + i); one
    uniform per customer, read in row-major order.
    """
    n_rows, n_states = counts.shape
    tables = np.zeros((n_rows, n_states), dtype=np.int64)
    pos = 0
    for j in range(n_rows):
        for k in range(n_states):
            a = concentration[k]
            m = 0
            for i in range(counts[j, k]):
                if uniforms[pos] * (a + i) < a:
                    m += 1
                pos += 1
            tables[j, k] = m
    return tables


@njit(cache=True)
def _pick(weights, n, draw):
    """Index drawn from unnormalised ``weights[:n]`` with the uniform ``draw``."""
    total = 0.0
    for k in range(n):
        total += weights[k]
    target = draw * total
    acc = 0.0
    last = -1
    for k in range(n):
        w = weights[k]
        if w > 0.0:
            acc += w
            last = k
            if acc > target:
                return k
    return last


@njit(cache=True)
def _ffbs_one(trans, trans_t, order, lik, index, slice_u, draws, begin, end, alpha, weights, states):
    """Slice-restricted forward filter, backward sampler for one sequence.

    ``alpha[t, k]`` ∝ lik_t(k) sum_{j : theta_jk > u_t} alpha[t-1, j]; the
    columns of each row are visited in decreasing ``theta`` order and the scan
    stops at the first entry <= u_t, so a step costs the number of allowed
    transitions out of the states with alpha > 0.  Returns False when the
    messages underflow (the caller then uses the log-space version).
    """
    n_states = trans.shape[1]
    n_steps = end - begin
    for t in range(n_steps):
        cur = alpha[t]
        for k in range(n_states):
            cur[k] = 0.0
        u = slice_u[begin + t]
        if t == 0:
            for idx in range(n_states):
                k = order[0, idx]
                if trans[0, k] <= u:
                    break
                cur[k] = 1.0
        else:
            prev = alpha[t - 1]
            for j in range(n_states):
                a = prev[j]
                if a == 0.0:
                    continue
                row = j + 1
                for idx in range(n_states):
                    k = order[row, idx]
                    if trans[row, k] <= u:
                        break
                    cur[k] += a
        r = index[begin + t]
        total = 0.0
        for k in range(n_states):
            v = cur[k]
            if v != 0.0:
                v *= lik[r, k]
                cur[k] = v
                total += v
        if not total > 1e-290:
            return False
        inv = 1.0 / total
        for k in range(n_states):
            cur[k] *= inv
    k = _pick(alpha[n_steps - 1], n_states, draws[end - 1])
    states[end - 1] = k
    for t in range(n_steps - 1, 0, -1):
        u = slice_u[begin + t]
        prev = alpha[t - 1]
        for j in range(n_states):
            weights[j] = prev[j] if trans_t[k, j + 1] > u else 0.0
        k = _pick(weights, n_states, draws[begin + t - 1])
        states[begin + t - 1] = k
    return True


@njit(cache=True)
def _ffbs_one_log(trans, log_lik, index, slice_u, draws, begin, end, states):
    """Log-space fallback of :func:`_ffbs_one` (dense scan; used only on underflow)."""
    n_states = trans.shape[1]
    n_steps = end - begin
    log_alpha = np.full((n_steps, n_states), -np.inf)
    weights = np.empty(n_states)
    for t in range(n_steps):
        u = slice_u[begin + t]
        r = index[begin + t]
        for k in range(n_states):
            acc = -np.inf
            if t == 0:
                if trans[0, k] > u:
                    acc = 0.0
            else:
                for j in range(n_states):
                    a = log_alpha[t - 1, j]
                    if a > -np.inf and trans[j + 1, k] > u:
                        acc = np.logaddexp(acc, a)
            if acc > -np.inf:
                log_alpha[t, k] = acc + log_lik[r, k]
        top = log_alpha[t].max()
        for k in range(n_states):
            log_alpha[t, k] -= top
    for k in range(n_states):
        weights[k] = np.exp(log_alpha[n_steps - 1, k])
    k = _pick(weights, n_states, draws[end - 1])
    states[end - 1] = k
    for t in range(n_steps - 1, 0, -1):
        u = slice_u[begin + t]
        for j in range(n_states):
            weights[j] = np.exp(log_alpha[t - 1, j]) if trans[j + 1, k] > u else 0.0
        k = _pick(weights, n_states, draws[begin + t - 1])
        states[begin + t - 1] = k


@njit(cache=True)
def _ffbs_sequences(trans, trans_t, order, lik, index, slice_u, draws, offsets, first_seq, last_seq,
                    longest, states, failed):
    """:func:`_ffbs_one` on sequences first_seq..last_seq-1 (one thread's share)."""
    n_states = trans.shape[1]
    alpha = np.empty((longest, n_states))
    weights = np.empty(n_states)
    for i in range(first_seq, last_seq):
        begin = offsets[i]
        end = offsets[i + 1]
        if end > begin:
            ok = _ffbs_one(trans, trans_t, order, lik, index, slice_u, draws, begin, end,
                           alpha, weights, states)
            failed[i] = not ok


@njit(parallel=True, cache=True)
def _ffbs_parallel(trans, trans_t, order, lik, index, slice_u, draws, offsets, chunk_bounds, longest,
                   states, failed):
    for c in prange(chunk_bounds.shape[0] - 1):
        _ffbs_sequences(trans, trans_t, order, lik, index, slice_u, draws, offsets, chunk_bounds[c],
                        chunk_bounds[c + 1], longest, states, failed)


def beam_ffbs(trans, order, lik, index, slice_u, draws, offsets, states, failed, parallel=None):
    """Sample every sequence's states given theta, the slice and the emissions.

    Parameters
    ----------
    trans : (K+1, K) theta restricted to the instantiated states; row 0 is
        the start row theta_0, row j+1 leaves state j.
    order : (K+1, K) int64, the columns of each row by decreasing ``trans``.
    lik : (R, K) emission weights (any positive scale per row); token t reads
        row ``index[t]``.
    slice_u, draws : (N,) slice variables u_t and uniforms for the backward draws.
    states : (N,) int32, written.
    failed : (I,) bool, set for sequences whose linear-space messages underflowed
        (their states are left for the log-space fallback).
    parallel : bool, optional
        Threads over sequences; by default only from PARALLEL_MIN_TOKENS tokens
        on, below which waking the thread pool costs more than the work.
        Results do not depend on it (the uniforms are drawn beforehand).
    """
    n_seq = offsets.shape[0] - 1
    longest = max(int(np.diff(offsets).max()), 1)
    trans_t = np.ascontiguousarray(trans.T)
    if parallel is None:
        parallel = offsets[-1] >= PARALLEL_MIN_TOKENS
    if parallel and n_seq > 1:
        _ffbs_parallel(trans, trans_t, order, lik, index, slice_u, draws, offsets,
                       equal_token_chunks(offsets), longest, states, failed)
    else:
        _ffbs_sequences(trans, trans_t, order, lik, index, slice_u, draws, offsets, 0, n_seq, longest,
                        states, failed)


# --------------------------------------------------------------------------------------------
# emission families: conjugate posterior draws, prior draws, log-likelihood tables


@njit(cache=True)
def _gaussian_log_lik(x, mu, tau):
    """(N, K) log N(x_t | mu_k, 1 / tau_k), diagonal, without an (N, K, D) temporary."""
    n_tokens, n_dims = x.shape
    n_states = mu.shape[0]
    const = np.zeros(n_states)
    for k in range(n_states):
        for d in range(n_dims):
            const[k] += 0.5 * (np.log(tau[k, d]) - np.log(2.0 * np.pi))
    out = np.empty((n_tokens, n_states))
    for t in range(n_tokens):
        for k in range(n_states):
            acc = const[k]
            for d in range(n_dims):
                diff = x[t, d] - mu[k, d]
                acc -= 0.5 * tau[k, d] * diff * diff
            out[t, k] = acc
    return out


class _CategoricalEmissions:
    def __init__(self, observations, n_symbols, beta):
        self.x = observations
        self.n_symbols = n_symbols
        self.beta = beta
        self.index = observations  # token t reads row x_t of the (W, K) table

    def sample_posterior(self, rng, states, n_states):
        counts = np.bincount(states.astype(np.int64) * self.n_symbols + self.x,
                             minlength=n_states * self.n_symbols).reshape(n_states, self.n_symbols)
        return _log_dirichlet(rng, counts + self.beta)  # (K, W) log phi

    def sample_prior(self, rng):
        return _log_dirichlet(rng, np.full(self.n_symbols, self.beta))

    def stack(self, params, extra):
        return np.vstack([params] + extra) if extra else params

    def log_lik_table(self, params):
        return np.ascontiguousarray(params.T)  # (W, K)

    def log_marginal(self, states, n_states):
        counts = np.bincount(states.astype(np.int64) * self.n_symbols + self.x,
                             minlength=n_states * self.n_symbols).reshape(n_states, self.n_symbols)
        w_beta = self.n_symbols * self.beta
        nz = counts[counts > 0]
        return float(n_states * gammaln(w_beta) - gammaln(w_beta + counts.sum(axis=1)).sum()
                     + (gammaln(self.beta + nz) - gammaln(self.beta)).sum())

    def estimates(self, states, n_states):
        counts = np.bincount(states.astype(np.int64) * self.n_symbols + self.x,
                             minlength=n_states * self.n_symbols).reshape(n_states, self.n_symbols)
        post = counts + self.beta
        return {"emissionprob_": post / post.sum(axis=1, keepdims=True)}


class _GaussianEmissions:
    """Diagonal Gaussian, Normal-Gamma prior per dimension: tau ~ Gamma(a0, rate b0),
    mu | tau ~ N(mu0, 1 / (kappa0 tau)) (the convention of families/gaussian.py)."""

    def __init__(self, observations, prior):
        self.x = observations
        n_tokens, n_dims = observations.shape
        self.index = np.arange(n_tokens, dtype=np.int64)
        self.mu0, self.kappa0, self.a0, self.b0 = prior

    def _stats(self, states, n_states):
        s = states.astype(np.int64)
        n = np.bincount(s, minlength=n_states).astype(float)
        s1 = np.stack([np.bincount(s, weights=col, minlength=n_states) for col in self.x.T], axis=1)
        s2 = np.stack([np.bincount(s, weights=col * col, minlength=n_states) for col in self.x.T], axis=1)
        return n[:, None], s1, s2

    def _posterior(self, states, n_states):
        n, s1, s2 = self._stats(states, n_states)
        kappa = self.kappa0 + n
        mean = (self.kappa0 * self.mu0 + s1) / kappa
        a = self.a0 + 0.5 * n
        b = self.b0 + 0.5 * np.maximum(s2 + self.kappa0 * self.mu0 ** 2 - kappa * mean ** 2, 0.0)
        return kappa, mean, np.broadcast_to(a, mean.shape), b

    def _draw(self, rng, kappa, mean, a, b):
        tau = rng.standard_gamma(a) / b
        mu = mean + rng.standard_normal(mean.shape) / np.sqrt(kappa * tau)
        return np.stack([mu, tau], axis=0)  # (2, K, D)

    def sample_posterior(self, rng, states, n_states):
        return self._draw(rng, *self._posterior(states, n_states))

    def sample_prior(self, rng):
        shape = self.mu0.shape
        return self._draw(rng, np.broadcast_to(self.kappa0, shape), self.mu0,
                          np.broadcast_to(self.a0, shape), self.b0)[:, None, :]

    def stack(self, params, extra):
        return np.concatenate([params] + extra, axis=1) if extra else params

    def log_lik_table(self, params):
        mu, tau = params
        return _gaussian_log_lik(self.x, np.ascontiguousarray(mu), np.ascontiguousarray(tau))

    def log_marginal(self, states, n_states):
        kappa, mean, a, b = self._posterior(states, n_states)
        n = kappa - self.kappa0
        return float((gammaln(a) - gammaln(self.a0) + self.a0 * np.log(self.b0) - a * np.log(b)
                      + 0.5 * (np.log(self.kappa0) - np.log(kappa)) - 0.5 * n * np.log(2 * np.pi)).sum())

    def estimates(self, states, n_states):
        kappa, mean, a, b = self._posterior(states, n_states)
        return {"means_": mean, "variances_": b / a}


def _gaussian_prior(observations, gaussian_prior):
    n_dims = observations.shape[1]
    if gaussian_prior is None:
        mu0 = observations.mean(axis=0)
        var = observations.var(axis=0) if len(observations) > 1 else np.ones(n_dims)
        kappa0, a0 = 0.01, 1.0
        b0 = a0 * np.where(var > 0, var, 1.0)
    elif isinstance(gaussian_prior, dict):
        unknown = set(gaussian_prior) - {"mu0", "kappa0", "a0", "b0"}
        if unknown or len(gaussian_prior) != 4:
            raise ValueError("gaussian_prior needs exactly the keys mu0, kappa0, a0, b0")
        mu0, kappa0, a0, b0 = (gaussian_prior[key] for key in ("mu0", "kappa0", "a0", "b0"))
    else:
        mu0, kappa0, a0, b0 = gaussian_prior
    out = [np.broadcast_to(np.asarray(v, dtype=float), (n_dims,)).copy() for v in (mu0, kappa0, a0, b0)]
    if not all(np.all(np.isfinite(v)) for v in out) or not (np.all(out[1] > 0) and np.all(out[2] > 0)
                                                            and np.all(out[3] > 0)):
        raise ValueError("gaussian_prior needs finite mu0 and kappa0, a0, b0 > 0")
    return out


# --------------------------------------------------------------------------------------------
# the sampler


def sample_top_level(rng, counts, log_pi, sigma, gamma):
    """Step 1: table counts m | pi, z (Antoniak), then pi | m ~ Dir(m_.1, ..., m_.K, gamma).

    ``counts`` (K+1, K) are the transition counts n_jk (row 0 the start row),
    ``log_pi`` (K+1,) the current stick (states, then the rest).  Over repeated
    calls with z fixed this is a Gibbs chain on (m, pi) whose pi-marginal is
    p(pi | z) ∝ Dir(pi; 0, ..., 0, gamma) prod_jk Gamma(sigma pi_k + n_jk) / Gamma(sigma pi_k)
    (eq. 5.10-5.12).  Returns the new log pi (K+1,).
    """
    n_states = counts.shape[1]
    concentration = sigma * np.exp(log_pi[:n_states])
    tables = _table_counts(counts, concentration, rng.random(int(counts.sum())))
    return _log_dirichlet(rng, np.append(tables.sum(axis=0), gamma))


def sample_transitions(rng, counts, log_pi, sigma):
    """Step 2: theta_j ~ Dir(sigma pi_1 + n_j1, ..., sigma pi_K + n_jK, sigma pi_rest), j = 0..K.

    Returns log theta (K+1, K+1): rows 0..K (start row first), columns the K
    states and the rest mass.
    """
    n_states = counts.shape[1]
    concentration = sigma * np.exp(log_pi)
    return _log_dirichlet(rng, np.hstack([counts + concentration[:n_states],
                                          np.full((n_states + 1, 1), concentration[-1])]))


def _validate(observations, offsets, n_symbols, n_iter, gamma, sigma, beta, n_init_states, emission):
    offsets = np.asarray(offsets)
    if offsets.ndim != 1 or offsets.size < 1 or not np.issubdtype(offsets.dtype, np.integer):
        raise ValueError("offsets must be a 1-d integer array of sequence boundaries (I + 1,)")
    offsets = offsets.astype(np.int64)
    if emission == "categorical":
        obs = np.asarray(observations)
        if obs.ndim != 1 or not np.issubdtype(obs.dtype, np.integer):
            raise ValueError("categorical observations must be a 1-d integer array of symbol ids")
        if int(n_symbols) < 1:
            raise ValueError("n_symbols must be positive")
        if obs.size and (obs.min() < 0 or obs.max() >= n_symbols):
            raise ValueError(f"symbol ids must lie in [0, {n_symbols})")
        obs = np.ascontiguousarray(obs, dtype=np.int64)
    elif emission == "gaussian":
        obs = np.asarray(observations, dtype=float)
        if obs.ndim == 1:
            obs = obs[:, None]
        if obs.ndim != 2 or not np.all(np.isfinite(obs)):
            raise ValueError("gaussian observations must be a finite float array (N, D)")
        obs = np.ascontiguousarray(obs)
    else:
        raise ValueError(f"unknown emission family {emission!r}; use 'categorical' or 'gaussian'")
    if offsets[0] != 0 or offsets[-1] != len(obs) or np.any(np.diff(offsets) < 0):
        raise ValueError("offsets must start at 0, end at the number of tokens and never decrease")
    if len(obs) == 0:
        raise ValueError("no tokens to sample")
    for name, value in (("gamma", gamma), ("sigma", sigma), ("beta", beta)):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be positive, got {value}")
    if int(n_init_states) < 1:
        raise ValueError("n_init_states must be at least 1")
    if int(n_iter) < 0:
        raise ValueError("n_iter must be non-negative")
    return obs, offsets


def _relabel(states, log_pi, n_states):
    """Drop unused states, order the rest by decreasing occupancy.

    ``log_pi`` (K+1,) holds the stick: states, then the rest mass; the mass of
    dropped states joins the rest.  Returns (states, log_pi, occupancy).
    """
    occupancy = np.bincount(states, minlength=n_states)
    order = np.argsort(-occupancy, kind="stable")
    used = order[occupancy[order] > 0]
    label = np.empty(n_states, dtype=np.int32)
    label[used] = np.arange(len(used), dtype=np.int32)
    dropped = np.ones(n_states + 1, dtype=bool)
    dropped[used] = False
    new_log_pi = np.append(log_pi[used], logsumexp(log_pi[dropped]))
    return label[states], new_log_pi, occupancy[used]


def _log_joint(counts, log_pi, sigma, emission_model, states, n_states):
    """log p(x, z | pi): eq. 5.10 (theta integrated out) plus the emission marginal."""
    conc = sigma * np.exp(log_pi[:n_states])
    rows, cols = np.nonzero(counts)
    n = counts[rows, cols]
    value = (counts.shape[0] * gammaln(sigma) - gammaln(sigma + counts.sum(axis=1)).sum()
             + (gammaln(conc[cols] + n) - gammaln(conc[cols])).sum())
    return float(value) + emission_model.log_marginal(states, n_states)


def beam_sample(observations, offsets, n_symbols, n_iter, gamma=1.0, sigma=1.0, beta=1.0,
                n_init_states=10, seed=0, callback=None, progress=False, emission="categorical",
                gaussian_prior=None):
    """Beam sampling for the HDP-HMM (Van Gael et al. 2008; thesis §5.5.1).

    Parameters
    ----------
    observations : ndarray (N,) int or (N, D) float
        Symbol ids (categorical) or feature rows (gaussian), all sequences
        concatenated.
    offsets : ndarray (I + 1,) int
        Sequence i is ``observations[offsets[i]:offsets[i + 1]]``.
    n_symbols : int
        Vocabulary size W (categorical; ignored for gaussian).
    n_iter : int
        Iterations (each one full sweep of steps 1-6 of the module docstring).
    gamma, sigma : float
        Concentrations of the top-level GEM(gamma) and of the rows DP(sigma, pi);
        fixed.
    beta : float
        Symmetric Dirichlet prior of the categorical emissions.
    n_init_states : int
        Each token's initial state is uniform on {0, ..., n_init_states - 1}.
    seed : int or numpy.random.Generator
    callback : callable(iteration, states, info) -> bool, optional
        Called after every iteration with the 1-based iteration, the current
        states (relabelled by occupancy; do not modify) and that iteration's
        history entry; returning True stops the run.
    progress : bool
        Show a progress bar.
    emission : {"categorical", "gaussian"}
    gaussian_prior : dict or tuple (mu0, kappa0, a0, b0), optional
        Normal-Gamma prior per dimension (scalars or (D,) arrays):
        tau ~ Gamma(a0, rate b0), mu | tau ~ N(mu0, 1 / (kappa0 tau)).  By
        default mu0 is the data mean, kappa0 = 0.01, a0 = 1 and b0 the data
        variance.

    Returns
    -------
    BeamResult
    """
    obs, offsets = _validate(observations, offsets, n_symbols, n_iter, gamma, sigma, beta,
                             n_init_states, emission)
    gamma, sigma, beta = float(gamma), float(sigma), float(beta)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if emission == "categorical":
        model = _CategoricalEmissions(obs, int(n_symbols), beta)
    else:
        model = _GaussianEmissions(obs, _gaussian_prior(obs, gaussian_prior))
    n_tokens = len(obs)
    n_seq = len(offsets) - 1
    first = np.zeros(n_tokens, dtype=bool)
    first[offsets[:-1][offsets[:-1] < offsets[1:]]] = True

    states = rng.integers(0, int(n_init_states), size=n_tokens).astype(np.int32)
    n_states = int(n_init_states)
    log_pi = np.full(n_states + 1, -np.log(n_states + 1.0))  # arbitrary start for the stick
    states, log_pi, occupancy = _relabel(states, log_pi, n_states)
    n_states = len(occupancy)

    history = []
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=int(n_iter), desc="beam", leave=False)
    try:
        for iteration in range(1, int(n_iter) + 1):
            started = time.perf_counter()
            counts = _transition_counts(states, offsets, n_states)

            # 1. pi | z through the table counts; 2. theta | z, pi and phi | z, x
            log_pi = sample_top_level(rng, counts, log_pi, sigma, gamma)
            log_theta = sample_transitions(rng, counts, log_pi, sigma)
            params = model.sample_posterior(rng, states, n_states)

            # 3. slice variables u_t ~ U(0, theta_{z_{t-1}, z_t})
            rows = np.empty(n_tokens, dtype=np.int64)
            rows[1:] = states[:-1] + 1
            rows[first] = 0
            slice_u = rng.random(n_tokens) * np.exp(log_theta[rows, states])
            min_u = slice_u.min()

            # 4. instantiate states until no row puts u-visible mass on unrepresented ones
            trans, _, log_pi, extra = _extend(rng, np.exp(log_theta), log_pi, sigma, gamma, min_u,
                                                 model)
            params = model.stack(params, extra)
            n_inst = trans.shape[1]

            # 5. slice-restricted forward filtering, backward sampling
            log_lik = model.log_lik_table(params)
            lik = np.exp(log_lik - log_lik.max(axis=1, keepdims=True))
            order = np.argsort(-trans, axis=1, kind="stable").astype(np.int64)
            new_states = np.empty(n_tokens, dtype=np.int32)
            failed = np.zeros(n_seq, dtype=np.bool_)
            beam_ffbs(trans, order, lik, model.index, slice_u, rng.random(n_tokens), offsets,
                      new_states, failed)
            if failed.any():
                redo = rng.random(n_tokens)
                log_rel = np.ascontiguousarray(log_lik - log_lik.max(axis=1, keepdims=True))
                for i in np.flatnonzero(failed):
                    _ffbs_one_log(trans, log_rel, model.index, slice_u, redo, offsets[i], offsets[i + 1],
                                  new_states)

            # 6. drop unused states, relabel by occupancy
            states, log_pi, occupancy = _relabel(new_states, log_pi, n_inst)
            n_states = len(occupancy)
            seconds = time.perf_counter() - started
            counts = _transition_counts(states, offsets, n_states)
            info = {"iteration": iteration, "n_states": n_states, "n_instantiated": n_inst,
                    "n_effective": effective_states(occupancy),
                    "log_joint": _log_joint(counts, log_pi, sigma, model, states, n_states),
                    "seconds": seconds}
            history.append(info)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(K=n_states, eff=info["n_effective"])
            if callback is not None and callback(iteration, states, info):
                break
    finally:
        if bar is not None:
            bar.close()

    counts = _transition_counts(states, offsets, n_states)
    conc = sigma * np.exp(log_pi[:n_states])
    mean = counts + conc
    mean /= mean.sum(axis=1, keepdims=True)
    return BeamResult(states=states, history=history, startprob_=mean[0], transmat_=mean[1:],
                      top_level_=np.exp(log_pi), **model.estimates(states, n_states))


def _extend(rng, theta, log_pi, sigma, gamma, min_u, model):
    """Step 4: break new states off the rest of the stick until every row's rest < min u.

    ``theta`` (K+1, K+1): rows 0..K (start row first), columns the K states and
    the rest mass.  A new state k gets pi_k = b pi_rest with b ~ Beta(1, gamma);
    each existing row splits its rest mass with Beta(sigma pi_k, sigma pi_rest')
    (the DP(sigma, pi) restricted to the rest), the new row is drawn from
    Dir(sigma pi_1, ..., sigma pi_k, sigma pi_rest') and its emission from the
    prior.  Returns (trans (K'+1, K'), rest (K'+1,), log_pi (K'+1,), new emissions).
    """
    n_states = theta.shape[1] - 1
    rest = theta[:, -1].copy()
    if rest.max() < min_u:
        return np.ascontiguousarray(theta[:, :-1]), rest, log_pi, []
    cap = max(2 * n_states, n_states + 8)
    trans = np.zeros((cap + 1, cap))
    trans[:n_states + 1, :n_states] = theta[:, :-1]
    rest_all = np.zeros(cap + 1)
    rest_all[:n_states + 1] = rest
    log_pis = list(log_pi[:-1])
    log_rest = log_pi[-1]
    extra = []
    k = n_states
    while rest_all[:k + 1].max() >= min_u:
        if k >= MAX_STATES:
            raise RuntimeError(f"the slice needs more than {MAX_STATES} states; gamma={gamma} is too large "
                               "for this data")
        if k + 1 > cap:
            cap *= 2
            grown = np.zeros((cap + 1, cap))
            grown[:k + 1, :k] = trans[:k + 1, :k]
            trans = grown
            rest_all = np.append(rest_all, np.zeros(cap + 1 - len(rest_all)))
        # top level: pi_k = b pi_rest, b ~ Beta(1, gamma), i.e. 1 - b = U^(1 / gamma)
        u = 0.0
        while u == 0.0:
            u = rng.random()
        log_1mb = np.log1p(-u) / gamma
        log_new, log_rest = log_rest + np.log(-np.expm1(log_1mb)), log_rest + log_1mb
        log_pis.append(log_new)
        a_new, a_rest = sigma * np.exp(log_new), sigma * np.exp(log_rest)
        shapes = np.concatenate([np.full(k + 1, a_new), np.full(k + 1, a_rest),
                                 sigma * np.exp(np.append(log_pis, log_rest))])
        draws = _log_gamma_draws(rng, shapes)
        g_new, g_rest, g_row = draws[:k + 1], draws[k + 1:2 * k + 2], draws[2 * k + 2:]
        # existing rows split their rest mass: Beta(sigma pi_k, sigma pi_rest'); when both
        # shapes are so small that both draws underflow, Beta(a, b) is Bernoulli(a / (a + b))
        both = np.isneginf(g_new) & np.isneginf(g_rest)
        if both.any():
            coin = rng.random(k + 1) < expit(log_new - log_rest)
            g_new = np.where(both, np.where(coin, 0.0, -np.inf), g_new)
            g_rest = np.where(both, np.where(coin, -np.inf, 0.0), g_rest)
        trans[:k + 1, k] = rest_all[:k + 1] * expit(g_new - g_rest)
        rest_all[:k + 1] *= expit(g_rest - g_new)
        # the new state's row ~ DP(sigma, pi) over k + 1 states and the rest
        row = np.exp(g_row - logsumexp(g_row))
        trans[k + 1, :k + 1] = row[:-1]
        rest_all[k + 1] = row[-1]
        extra.append(model.sample_prior(rng))
        k += 1
    return (np.ascontiguousarray(trans[:k + 1, :k]), rest_all[:k + 1].copy(),
            np.append(log_pis, log_rest), extra)
