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

The emissions are a family of `cvbayes.families` (its posterior draws, log
tables and marginal), step 5 is `cvbayes.chains.ffbs`, and every Dirichlet
number comes from `cvbayes.core`: the draws of `core.sampling`, the posterior
means and the collapsed marginal of `core.rules`.  All random numbers come from
one ``numpy.random.Generator``; the numba kernels receive pre-drawn uniforms,
so a run is reproducible for a fixed seed whatever the number of threads.
"""
import time
from dataclasses import dataclass, field

import numpy as np
from numba import njit
from scipy.special import expit

from ..chains.ffbs import beam_ffbs, beam_ffbs_log
from ..core import rules
from ..core.sampling import log_dirichlet_draws, log_gamma_draws, logsumexp
from ..data import Corpus
from ..families import Categorical, Gaussian
from ..families.ops import state_stats
from .hdp import effective_states

# Largest number of instantiated states before the extension step gives up
# (only reached with a huge gamma or a pathological slice).
MAX_STATES = 100_000


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
    return log_dirichlet_draws(rng, np.append(tables.sum(axis=0), gamma))


def sample_transitions(rng, counts, log_pi, sigma):
    """Step 2: theta_j ~ Dir(sigma pi_1 + n_j1, ..., sigma pi_K + n_jK, sigma pi_rest), j = 0..K.

    Returns log theta (K+1, K+1): rows 0..K (start row first), columns the K
    states and the rest mass.
    """
    n_states = counts.shape[1]
    concentration = sigma * np.exp(log_pi)
    return log_dirichlet_draws(rng, np.hstack([counts + concentration[:n_states],
                                               np.full((n_states + 1, 1), concentration[-1])]))


def _gaussian_family(obs, gaussian_prior):
    """The Normal-Gamma family of ``gaussian_prior`` = (mu0, kappa0, a0, b0); None gives the family's
    defaults (mu0 the data mean, kappa0 = 0.01, a0 = 1, b0 the data variance)."""
    if gaussian_prior is None:
        return Gaussian()
    if isinstance(gaussian_prior, dict):
        unknown = set(gaussian_prior) - {"mu0", "kappa0", "a0", "b0"}
        if unknown or len(gaussian_prior) != 4:
            raise ValueError("gaussian_prior needs exactly the keys mu0, kappa0, a0, b0")
        mu0, kappa0, a0, b0 = (gaussian_prior[key] for key in ("mu0", "kappa0", "a0", "b0"))
    else:
        mu0, kappa0, a0, b0 = gaussian_prior
    if np.ndim(kappa0) or np.ndim(a0):
        raise ValueError("gaussian_prior: kappa0 and a0 are scalars (mu0 and b0 may be (D,) arrays)")
    mu0, b0 = (np.broadcast_to(np.asarray(v, dtype=float), (obs.shape[1],)).copy() for v in (mu0, b0))
    if not (np.all(np.isfinite(mu0)) and np.isfinite(kappa0) and np.isfinite(a0) and np.all(np.isfinite(b0))
            and kappa0 > 0 and a0 > 0 and np.all(b0 > 0)):
        raise ValueError("gaussian_prior needs finite mu0 and kappa0, a0, b0 > 0")
    return Gaussian(mean=mu0, kappa=kappa0, shape=a0, rate=b0)


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


def _log_joint(counts, log_pi, sigma, family, stats):
    """log p(x, z | pi): eq. 5.10 (theta integrated out: every row a Dirichlet-multinomial with
    pseudo-counts sigma pi_k and total sigma, the rest belonging to unrepresented states) plus the
    emission marginal."""
    n_states = counts.shape[1]
    return (rules.dirichlet_log_marginal(counts, sigma * np.exp(log_pi[:n_states]), total=sigma)
            + family.log_marginal(stats))


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
        Normal-Gamma prior per dimension (`cvbayes.families.Gaussian`):
        tau ~ Gamma(a0, rate b0), mu | tau ~ N(mu0, 1 / (kappa0 tau)), with
        scalars kappa0 > 0 and a0 > 1/2, and mu0, b0 scalars or (D,) arrays.
        By default mu0 is the data mean, kappa0 = 0.01, a0 = 1 and b0 the
        data variance.

    Returns
    -------
    BeamResult
    """
    obs, offsets = _validate(observations, offsets, n_symbols, n_iter, gamma, sigma, beta,
                             n_init_states, emission)
    gamma, sigma, beta = float(gamma), float(sigma), float(beta)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    family, corpus = _emissions(obs, offsets, n_symbols, beta, emission, gaussian_prior)
    index, features = family.index(corpus), family.features(corpus)
    n_stats = family.n_stats()
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
            params = family.draw_parameters(rng, state_stats(family.code, index, features, states, n_states,
                                                             n_stats))

            # 3. slice variables u_t ~ U(0, theta_{z_{t-1}, z_t})
            rows = np.empty(n_tokens, dtype=np.int64)
            rows[1:] = states[:-1] + 1
            rows[first] = 0
            slice_u = rng.random(n_tokens) * np.exp(log_theta[rows, states])
            min_u = slice_u.min()

            # 4. instantiate states until no row puts u-visible mass on unrepresented ones
            trans, _, log_pi, extra = _extend(rng, np.exp(log_theta), log_pi, sigma, gamma, min_u, family)
            params = {name: np.concatenate([value] + [new[name] for new in extra]) for name, value in params.items()}
            n_inst = trans.shape[1]

            # 5. slice-restricted forward filtering, backward sampling
            log_lik = family.log_table(params, corpus)
            lik = np.exp(log_lik - log_lik.max(axis=1, keepdims=True))
            order = np.argsort(-trans, axis=1, kind="stable").astype(np.int64)
            new_states = np.empty(n_tokens, dtype=np.int32)
            failed = np.zeros(n_seq, dtype=np.bool_)
            beam_ffbs(trans, order, lik, index, slice_u, rng.random(n_tokens), offsets, new_states, failed)
            if failed.any():
                redo = rng.random(n_tokens)
                log_rel = np.ascontiguousarray(log_lik - log_lik.max(axis=1, keepdims=True))
                for i in np.flatnonzero(failed):
                    beam_ffbs_log(trans, log_rel, index, slice_u, redo, offsets[i], offsets[i + 1], new_states)

            # 6. drop unused states, relabel by occupancy
            states, log_pi, occupancy = _relabel(new_states, log_pi, n_inst)
            n_states = len(occupancy)
            seconds = time.perf_counter() - started
            counts = _transition_counts(states, offsets, n_states)
            stats = state_stats(family.code, index, features, states, n_states, n_stats)
            info = {"iteration": iteration, "n_states": n_states, "n_instantiated": n_inst,
                    "n_effective": effective_states(occupancy),
                    "log_joint": _log_joint(counts, log_pi, sigma, family, stats),
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
    mean = rules.dirichlet_table(rules.MEAN, counts, sigma * np.exp(log_pi[:n_states]))
    fitted = family.fitted(state_stats(family.code, index, features, states, n_states, n_stats), rules.MEAN)
    if "covars_" in fitted:
        fitted["variances_"] = fitted.pop("covars_")
    return BeamResult(states=states, history=history, startprob_=mean[0], transmat_=mean[1:],
                      top_level_=np.exp(log_pi), **fitted)


def _emissions(obs, offsets, n_symbols, beta, emission, gaussian_prior):
    """The emission family and the corpus it reads: Categorical(beta) over ``n_symbols``, or a
    diagonal Gaussian with the Normal-Gamma prior ``gaussian_prior``."""
    if emission == "categorical":
        family = Categorical(beta=beta, n_symbols=int(n_symbols))
    else:
        family = _gaussian_family(obs, gaussian_prior)
    corpus = Corpus(obs, offsets)
    family.prepare(corpus, 1)
    return family, corpus


def _extend(rng, theta, log_pi, sigma, gamma, min_u, family):
    """Step 4: break new states off the rest of the stick until every row's rest < min u.

    ``theta`` (K+1, K+1): rows 0..K (start row first), columns the K states and
    the rest mass.  A new state k gets pi_k = b pi_rest with b ~ Beta(1, gamma);
    each existing row splits its rest mass with Beta(sigma pi_k, sigma pi_rest')
    (the DP(sigma, pi) restricted to the rest), the new row is drawn from
    Dir(sigma pi_1, ..., sigma pi_k, sigma pi_rest') and its emission from the
    prior (the family's draw given no statistics).  Returns (trans (K'+1, K'), rest (K'+1,),
    log_pi (K'+1,), the new states' emission parameters).
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
        draws = log_gamma_draws(rng, shapes)
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
        extra.append(family.draw_parameters(rng, np.zeros((family.n_stats(), 1))))
        k += 1
    return (np.ascontiguousarray(trans[:k + 1, :k]), rest_all[:k + 1].copy(),
            np.append(log_pis, log_rest), extra)
