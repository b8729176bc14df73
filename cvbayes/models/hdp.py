"""The HDP part of collapsed VI for HDP-HMMs (thesis §5.3, eq. 5.10-5.40).

Given the expected transition counts E[C_jk] of the restaurants j = 0..K (row 0
is the start state) and the occupancies q(C_jk > 0), q(C_j. > 0) of §5.4, this
module computes

* the expected table counts E[s_jk] by the split at zero and the Taylor step
  (eq. 5.29-5.35);
* the top-level stick posteriors Beta(u_k, v_k) (eq. 5.25-5.26) and the
  geometric expectations G[pi_k] that the surrogate transitions use (eq. 5.28,
  5.38);
* the concentrations gamma (eq. 5.17) and sigma (eq. 5.20), in closed form or
  as gradient steps (eq. 5.16, 5.19, 5.23-5.24, 5.40);
* the part of L^CVI these updates maximise, `hyper_objective`, so that tests
  can check they never lower it.

The same formulas serve the emission prior beta * tau of §5.5.3 (each state's
emission row ~ Dir(beta tau)): tables of word w in state k, E[t_kw], follow
eq. 5.35 with sigma G[pi_k] replaced by beta tau_w, beta follows eq. 5.20, and
tau is the posterior mean of a flat Dirichlet given the tables (the
point-estimate treatment of the top level in Teh et al. 2008).

Under q(s | z) optimal (eq. 5.28), the s-terms of L^CVI collapse to
E_z[log Gamma(x + C) - log Gamma(x)] with x = sigma G[pi_k]; splitting at
C = 0 and taking C = E_+[C] on the rest (eq. 5.34) gives

    F = sum_j q(C_j. > 0) [log Gamma(sigma) - log Gamma(sigma + E_+[C_j.])]
      + sum_jk q(C_jk > 0) [log Gamma(x_k + E_+[C_jk]) - log Gamma(x_k)]
      + E[log p(pi~ | gamma)] - E[log q(pi~)]                     (eq. 5.15, 5.22)

whose derivatives are exactly eq. 5.16, 5.19 (with 5.35-5.36) and 5.23-5.24.

`HDPTransitions` and `HDPOccupancy` are what the HDP-HMM hands the finite HMM's structures
(models/hmm_structures.py): the transition part with the prior sigma G[pi_k], and the occupancy
strategy that fills the q(C = 0) products of every pass or minibatch and runs these updates after it.
"""
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize
from scipy.special import digamma, gammaln, polygamma

from ..chains.occupancy import method_code
from ..core import rules
from ..core.restaurants import expected_tables, positive_mean
from ..families.transitions import Transitions

# sigma's fixed point (eq. 5.20) is Minka's; it converges in a few dozen steps
SIGMA_STEPS = 50
SIGMA_TOLERANCE = 1e-10


@dataclass
class Occupancy:
    """What the hyperparameter updates need from the hidden sequences.

    counts : (R, K) E[C_jk] of restaurants j (transitions: R = K + 1, row 0
        the start state; emissions: R = K states by columns w, see `emission_occupancy`)
    occupied : (R, K) q(C_jk > 0)
    totals : (R,) E[C_j.]
    occupied_rows : (R,) q(C_j. > 0)
    """

    counts: np.ndarray
    occupied: np.ndarray
    totals: np.ndarray
    occupied_rows: np.ndarray


def transition_occupancy(start_counts, trans_counts, zero_start, zero_pairs, zero_exits, n_sequences):
    """The restaurants 0..K of the transitions: the start state (always entered by
    every sequence, so q(C_0. > 0) = 1) and the K states (eq. 5.46)."""
    counts = np.vstack([start_counts[None], trans_counts])
    occupied = 1.0 - np.vstack([zero_start[None], zero_pairs])
    occupied_rows = np.concatenate([[1.0 if n_sequences > 0 else 0.0], 1.0 - zero_exits])
    return Occupancy(np.maximum(counts, 0.0), np.clip(occupied, 0.0, 1.0), np.maximum(counts.sum(axis=1), 0.0),
                     np.clip(occupied_rows, 0.0, 1.0))


def _log_gamma_gain(x, counts, occupied):
    """q(C > 0) (log Gamma(x + E_+[C]) - log Gamma(x)): E[log Gamma(x + C) - log Gamma(x)]
    split at zero with the Taylor step on C > 0 (eq. 5.30-5.35, integrated)."""
    gain = gammaln(x + positive_mean(counts, occupied)) - gammaln(x)
    return occupied * gain


def digamma_gap(sigma, totals, occupied_rows):
    """sum_j E[psi(sigma + C_j.)] - psi(sigma) ~ sum_j q(C_j. > 0) (psi(sigma + E_+[C_j.]) - psi(sigma))
    (eq. 5.36)."""
    return float((occupied_rows * (digamma(sigma + positive_mean(totals, occupied_rows))
                                   - digamma(sigma))).sum())


@dataclass
class Sticks:
    """q(pi~_k) = Beta(u_k, v_k), k = 1..K, and the concentrations gamma, sigma.

    Stick k serves state ``order[k]``: footnote 4 orders the sticks by the
    states' expected counts, which `reorder` does without relabelling any data.
    """

    u: np.ndarray
    v: np.ndarray
    gamma: float
    sigma: float
    order: np.ndarray = None

    def __post_init__(self):
        if self.order is None:
            self.order = np.arange(self.u.shape[0])

    @classmethod
    def prior(cls, n_states, gamma, sigma):
        """The sticks at their prior Beta(1, gamma)."""
        return cls(np.ones(n_states), np.full(n_states, float(gamma)), float(gamma), float(sigma))

    def reorder(self, order):
        """Give stick k to state order[k]; every state keeps its own Beta(u, v)."""
        position = np.empty_like(self.order)
        position[self.order] = np.arange(self.order.shape[0])
        self.u = self.u[position[order]]
        self.v = self.v[position[order]]
        self.order = np.asarray(order)

    def by_stick(self, per_state):
        """A per-state vector (or the columns of a matrix) in stick order."""
        return per_state[..., self.order]

    def log_weights(self):
        """log G[pi_k] = E[log pi~_k] + sum_{l<k} E[log(1 - pi~_l)] (text after eq. 5.28)."""
        both = digamma(self.u + self.v)
        stay = digamma(self.v) - both
        return digamma(self.u) - both + np.concatenate([[0.0], np.cumsum(stay)[:-1]])

    def state_weights(self):
        """G[pi] of every state (stick order undone)."""
        weights = np.empty(self.u.shape[0])
        weights[self.order] = np.exp(self.log_weights())
        return weights

    def prior_row(self):
        """sigma G[pi_k]: the per-state transition prior of eq. 5.38."""
        return self.sigma * self.state_weights()


def update_sticks(sticks, tables):
    """u_k = 1 + E[s_.k], v_k = gamma + E[s_.>k] (eq. 5.25-5.26); ``tables`` (R, K) by state."""
    per_state = sticks.by_stick(tables.sum(axis=0))
    beyond = np.concatenate([np.cumsum(per_state[::-1])[::-1][1:], [0.0]])
    sticks.u = 1.0 + per_state
    sticks.v = sticks.gamma + beyond


def update_gamma(sticks):
    """gamma = K / sum_k (psi(u_k + v_k) - psi(v_k)) (eq. 5.17)."""
    sticks.gamma = float(sticks.u.shape[0] / (digamma(sticks.u + sticks.v) - digamma(sticks.v)).sum())


def fixed_point_concentration(value, weights, occupancy):
    """Eq. 5.20's fixed point for a concentration c whose per-column priors are
    c * weights: c = sum E[s] / (sum_j E[psi(c + C_j.)] - psi(c)), iterated
    (Minka's update; each step raises `hyper_objective`)."""
    for _ in range(SIGMA_STEPS):
        tables = expected_tables(value * weights, occupancy.counts, occupancy.occupied).sum()
        gap = digamma_gap(value, occupancy.totals, occupancy.occupied_rows)
        if not (gap > 0.0 and tables > 0.0):
            return value
        new = tables / gap
        if abs(new - value) <= SIGMA_TOLERANCE * value:
            return float(new)
        value = float(new)
    return value


def update_sigma(sticks, occupancy):
    """sigma by eq. 5.20, E[s] following sigma (eq. 5.35)."""
    sticks.sigma = fixed_point_concentration(sticks.sigma, sticks.state_weights(), occupancy)


def hyper_objective(sticks, occupancy):
    """The terms of L^CVI in gamma, sigma, u, v with q(s | z) optimal (module notes;
    eq. 5.15, 5.18, 5.21-5.22 with the split-at-zero approximation)."""
    u, v, gamma, sigma = sticks.u, sticks.v, sticks.gamma, sticks.sigma
    x = sticks.prior_row()
    restaurants = (occupancy.occupied_rows * (gammaln(sigma) - gammaln(
        sigma + positive_mean(occupancy.totals, occupancy.occupied_rows)))).sum()
    tables = _log_gamma_gain(x, occupancy.counts, occupancy.occupied).sum()
    both = digamma(u + v)
    e_log, e_log_rest = digamma(u) - both, digamma(v) - both
    n_states = u.shape[0]
    log_prior = n_states * (gammaln(1.0 + gamma) - gammaln(gamma)) + (gamma - 1.0) * e_log_rest.sum()
    entropy = -(gammaln(u + v) - gammaln(u) - gammaln(v) + (u - 1.0) * e_log + (v - 1.0) * e_log_rest).sum()
    return float(restaurants + tables + log_prior + entropy)


def gradients(sticks, occupancy):
    """dL/dgamma, dL/dsigma, dL/du, dL/dv (eq. 5.16, 5.19, 5.23-5.24), u and v in stick order."""
    u, v, gamma, sigma = sticks.u, sticks.v, sticks.gamma, sticks.sigma
    tables = expected_tables(sticks.prior_row(), occupancy.counts, occupancy.occupied)
    per_state = sticks.by_stick(tables.sum(axis=0))
    from_k = np.cumsum(per_state[::-1])[::-1]
    trigamma_both = polygamma(1, u + v)
    d_gamma = u.shape[0] / gamma + (digamma(v) - digamma(u + v)).sum()
    d_sigma = -digamma_gap(sigma, occupancy.totals, occupancy.occupied_rows) + per_state.sum() / sigma
    d_u = trigamma_both * (u + v - from_k - gamma - 1.0) - polygamma(1, u) * (u - per_state - 1.0)
    d_v = trigamma_both * (u + v - from_k - gamma - 1.0) - polygamma(1, v) * (v - (from_k - per_state) - gamma)
    return float(d_gamma), float(d_sigma), d_u, d_v


def batch_update(sticks, occupancy, learn_concentrations=True):
    """The batch CVI updates after a pass (§5.3): sticks (eq. 5.25-5.26) at the
    tables of the current sigma G[pi], then gamma (eq. 5.17) and sigma (eq. 5.20).
    Each is a coordinate step on `hyper_objective`."""
    update_sticks(sticks, expected_tables(sticks.prior_row(), occupancy.counts, occupancy.occupied))
    if learn_concentrations:
        update_gamma(sticks)
        update_sigma(sticks, occupancy)


def stochastic_update(sticks, occupancy, rho, learn_concentrations=True):
    """One step of eq. 5.40 for gamma, sigma, u_k, v_k.

    The raw gradients of eq. 5.16-5.24 scale with the corpus, so the step is
    taken in the natural (Fisher) metric of each parameter: for the Beta sticks
    the natural gradient of eq. 5.23-5.24 is (target - current), and for gamma
    and sigma the step is scaled to move rho of the way to the zero of their
    own gradient.  The direction is the gradient's, so small steps ascend.
    """
    tables = expected_tables(sticks.prior_row(), occupancy.counts, occupancy.occupied)
    target = Sticks(sticks.u, sticks.v, sticks.gamma, sticks.sigma, sticks.order)
    update_sticks(target, tables)
    sticks.u = (1.0 - rho) * sticks.u + rho * target.u
    sticks.v = (1.0 - rho) * sticks.v + rho * target.v
    if learn_concentrations:
        target.u, target.v = sticks.u, sticks.v
        update_gamma(target)
        sigma_star = fixed_point_concentration(sticks.sigma, sticks.state_weights(), occupancy)
        sticks.gamma = (1.0 - rho) * sticks.gamma + rho * target.gamma
        sticks.sigma = (1.0 - rho) * sticks.sigma + rho * sigma_star


def gem_mean(n_states, gamma):
    """E[pi_k] under GEM(gamma), k = 1..K: (1 / (1 + gamma)) (gamma / (1 + gamma))^(k-1)."""
    return (1.0 / (1.0 + gamma)) * (gamma / (1.0 + gamma)) ** np.arange(n_states)


def point_stick(weights, counts, sigma, gamma):
    """The top-level weights beta maximising E_q[log p(theta | sigma beta)] + log GEM(beta)
    given Dirichlet q(theta_j) = Dir(C_j + sigma beta) (svi-p, Johnson and Willsky 2014).

    ``weights`` (K,) is the current beta, whose remainder 1 - sum beta belongs to
    the unrepresented states; ``counts`` (R, K) the expected transition counts.
    Optimised over the stick fractions v_k (beta_k = v_k prod_{l<k} (1 - v_l),
    v_k ~ Beta(1, gamma)) in logit space by L-BFGS with the analytic gradient.
    """
    # E_q[log theta_jk] and E_q[log theta_j,rest], VB's log cells (eq. 3.21)
    row_counts = counts.sum(axis=1, keepdims=True)
    e_log = rules.log_dirichlet_table(rules.VB, counts, sigma * weights, row_counts, sigma)
    e_log_rest = rules.log_dirichlet_table(rules.VB, 0.0, sigma * max(1.0 - weights.sum(), 1e-12),
                                           row_counts[:, 0], sigma)

    def negative(logits):
        v = 1.0 / (1.0 + np.exp(-logits))
        stay = np.cumprod(1.0 - v)
        beta = v * np.concatenate([[1.0], stay[:-1]])
        rest = stay[-1]
        value = ((sigma * beta * e_log).sum() + (sigma * rest * e_log_rest).sum()
                 - counts.shape[0] * (gammaln(sigma * beta).sum() + gammaln(sigma * rest))
                 + (gamma - 1.0) * np.log1p(-v).sum())
        g_beta = sigma * (e_log.sum(axis=0) - counts.shape[0] * digamma(sigma * beta))
        g_rest = sigma * (e_log_rest.sum() - counts.shape[0] * digamma(sigma * rest))
        # d beta_k / d v_m: beta_m / v_m at k = m, -beta_k / (1 - v_m) for k > m; rest likewise
        later = np.concatenate([np.cumsum((g_beta * beta)[::-1])[::-1][1:], [0.0]])
        g_v = g_beta * beta / v - (later + g_rest * rest + (gamma - 1.0)) / (1.0 - v)
        return -value, -g_v * v * (1.0 - v)

    stay = np.concatenate([[1.0], 1.0 - np.cumsum(weights)[:-1]])
    v = np.clip(weights / np.maximum(stay, 1e-12), 1e-9, 1.0 - 1e-9)
    result = minimize(negative, np.log(v) - np.log1p(-v), jac=True, method="L-BFGS-B",
                      options={"maxiter": 50})
    v = 1.0 / (1.0 + np.exp(-result.x))
    return v * np.concatenate([[1.0], np.cumprod(1.0 - v)[:-1]])


def emission_occupancy(stats_counts, zero_emissions):
    """The emission restaurants (one per state k, dishes the words w): E[C_kw]
    (K, W), q(C_kw > 0) from prod_t (1 - q(z_t = k)) over word w's tokens, and
    the state totals with q(C_k. > 0) = 1 - prod_w q(C_kw = 0)."""
    occupied = np.clip(1.0 - zero_emissions.T, 0.0, 1.0)
    counts = np.maximum(stats_counts, 0.0)
    occupied_rows = 1.0 - np.prod(zero_emissions, axis=0)
    return Occupancy(counts, occupied, counts.sum(axis=1), np.clip(occupied_rows, 0.0, 1.0))


def update_emission_prior(beta, tau, occupancy):
    """beta tau of §5.5.3: tau_w = (E[t_.w] + 1) / (sum_w E[t_.w] + W) (the posterior mean
    under a flat Dirichlet) with E[t_kw] by eq. 5.35, then beta by eq. 5.20."""
    tables = expected_tables(beta * tau, occupancy.counts, occupancy.occupied).sum(axis=0)
    tau = (tables + 1.0) / (tables.sum() + tables.shape[0])
    return fixed_point_concentration(beta, tau, occupancy), tau


def effective_states(state_counts, coverage=0.99):
    """The fewest states that together cover ``coverage`` of the tokens.

    Thesis §5.5.1, footnote 4: the states are ranked by occupancy and the
    number of effective states is the smallest n such that the n largest
    counts hold at least ``coverage`` of the total.

    Parameters
    ----------
    state_counts : array-like of shape (K,)
        Tokens (or expected tokens) per state; non-negative.
    coverage : float in (0, 1]

    Returns
    -------
    int
        0 when there are no tokens.
    """
    counts = np.asarray(state_counts, dtype=float).ravel()
    if not 0.0 < coverage <= 1.0:
        raise ValueError(f"coverage must lie in (0, 1], got {coverage}")
    if counts.size and (not np.all(np.isfinite(counts)) or counts.min() < 0):
        raise ValueError("state counts must be finite and non-negative")
    total = counts.sum()
    if total <= 0:
        return 0
    ranked = np.cumsum(np.sort(counts)[::-1])
    # relative slack so that e.g. 99 of 100 tokens count as 99 %
    needed = coverage * total * (1.0 - 1e-12)
    return int(min(np.searchsorted(ranked, needed, side="left") + 1, np.count_nonzero(counts)))


class HDPTransitions(Transitions):
    """The HDP-HMM's transition part: every row Dir(sigma G[pi_k]) with total sigma (eq. 5.38) under the
    ``sticks``; svi-p's point estimate ``top_weights`` beta gives sigma beta_k instead.  While
    ``first_alpha`` is set (the first pass of batch CVI) every pseudo-count is that instead; while ``merged``
    is a pair (keep, gone) (a merge trial, `MovingSweep`) keep's weight is the sum of the two and gone's zero,
    as in `merge_gain`."""

    def __init__(self, n_states, sticks, sigma, top_weights=None):
        super().__init__(n_states, sigma / n_states)
        self.sticks = sticks
        self.sigma = float(sigma)
        self.top_weights = top_weights
        self.first_alpha = None
        self.merged = None

    def prior(self):
        if self.first_alpha is not None:
            return np.full(self.n_states, self.first_alpha), self.n_states * self.first_alpha
        if self.top_weights is not None:
            return self.sigma * self.top_weights, self.sigma
        row = self.sticks.prior_row()
        if self.merged is not None:   # a merge trial: the two states' weights summed (the DP's aggregation)
            keep, gone = self.merged
            row[keep] += row[gone]
            row[gone] = 0.0
        return row, self.sticks.sigma


class HDPOccupancy:
    """The HDP-HMM's occupancy strategy (thesis §5.3-5.5): the q(C = 0) products the HMM's updates fill
    (§5.4, by ``method``) and the hyperparameter updates after every pass of batch CVI (table counts
    eq. 5.35, sticks eq. 5.25-5.26, gamma eq. 5.17, sigma eq. 5.20, past ``burn_in`` passes; beta tau
    of §5.5.3) or after every minibatch step and pass of SCVI (eq. 5.40); svi-p moves ``top_weights``
    towards its optimum instead.  ``history`` receives a record a pass (`HDPHMM.hyper_history_`).

    With ``first_pass`` (batch CVI) the first pass runs on ``first_alpha`` and ``first_word_prior`` where
    they are given; the emission prior is the family's (categorical: Dir(beta), or Dir(beta tau) with
    tau uniform when it is learned).
    """

    def __init__(self, transitions, family, method, n_samples, learn_concentrations, learn_emission_prior,
                 burn_in, beta, first_alpha=None, first_word_prior=None, first_pass=False, gamma=None):
        self.transitions = transitions
        self.family = family
        self.method = method_code(method)
        self.n_samples = int(n_samples)
        self.learn_concentrations = learn_concentrations
        self.learn_emission_prior = learn_emission_prior
        self.burn_in = burn_in
        self.beta = beta
        self.gamma = gamma
        self.first_word_prior = first_word_prior
        self.history = []
        self.first_pass = first_pass
        if first_pass:
            transitions.first_alpha = first_alpha
        self.set_emission_prior(first_word_prior if first_pass else None)

    def set_emission_prior(self, per_word=None):
        """Dir(beta), or Dir(beta tau) with tau uniform when the emission prior is learned; with
        ``per_word``, that pseudo-count on every word instead (the first pass)."""
        if not self.family.discrete:
            return
        n_words = self.family.n_symbols
        if per_word is not None:
            self.family.set_prior(per_word * n_words, np.full(n_words, 1.0 / n_words))
        elif self.learn_emission_prior:
            self.family.set_prior(self.beta, np.full(n_words, 1.0 / n_words))
        else:
            self.family.set_prior(self.beta)

    def track(self, checkpoint):
        """Declare the state the updates change to a `cvbayes.checkpoints.Checkpoint`."""
        transitions = self.transitions

        def saved():
            sticks = transitions.sticks
            return {"u": sticks.u, "v": sticks.v, "order": sticks.order, "gamma": sticks.gamma, "sigma": sticks.sigma,
                    "top_weights": transitions.top_weights, "history": list(self.history),
                    "first_pass": self.first_pass, "first_alpha": transitions.first_alpha,
                    "beta": getattr(self.family, "beta", None), "tau": getattr(self.family, "tau", None)}

        def restore(state):
            sticks = transitions.sticks
            sticks.u, sticks.v, sticks.order = state["u"], state["v"], state["order"]
            sticks.gamma, sticks.sigma = state["gamma"], state["sigma"]
            if transitions.top_weights is not None:
                transitions.top_weights[:] = state["top_weights"]
            self.history[:] = state["history"]
            self.first_pass, transitions.first_alpha = state["first_pass"], state["first_alpha"]
            if self.family.discrete:
                self.family.set_prior(state["beta"], state["tau"])

        checkpoint.track("hdp", saved, restore)

    # -- batch CVI --------------------------------------------------------------------------------------
    def pass_products(self, seed, iteration):
        """What a pass of the HMM's unit updates fills (models/hmm_kernels.py): the q(C = 0) products
        (start (K,), pairs (K, K), exits (K,), emissions (W, K) when beta tau is learned), the method,
        and the samples and seed of the "sampling" method."""
        k = self.transitions.n_states
        n_words = self.family.n_symbols if self.learn_emission_prior else 0
        zero = (np.ones(k), np.ones((k, k)), np.ones(k), np.ones((n_words, k)))
        return zero, self.method, self.n_samples, (seed + 1) * 1_000_003 + iteration * 7919

    def after_collapsed_pass(self, marginals, counts, zero, n_sequences):
        """Batch CVI after every pass: the sticks ordered by expected tokens (footnote 4), then the table
        counts (eq. 5.35) and the sticks, gamma and sigma (eq. 5.25-5.26, 5.17, 5.20), and past
        ``burn_in`` beta tau (§5.5.3)."""
        if self.first_pass:
            self.first_pass = False
            self.transitions.first_alpha = None
            if self.first_word_prior is not None:
                self.set_emission_prior()
        sticks = self.transitions.sticks
        start_counts, trans_counts, stats = counts
        zero_start, zero_pairs, zero_exits, zero_emissions = zero
        tokens = marginals.sum(axis=0, dtype=np.float64)
        sticks.reorder(np.argsort(-tokens, kind="stable"))
        occupancy = transition_occupancy(start_counts, trans_counts, zero_start, zero_pairs, zero_exits, n_sequences)
        before = hyper_objective(sticks, occupancy)
        learn = len(self.history) >= self.burn_in
        batch_update(sticks, occupancy, self.learn_concentrations and learn)
        record = {"gamma": sticks.gamma, "sigma": sticks.sigma, "objective_before": before,
                  "objective_after": hyper_objective(sticks, occupancy)}
        if self.learn_emission_prior and learn:
            record["beta"] = self._update_emission_prior(stats, zero_emissions)
        record["effective_states"] = effective_states(tokens)
        record["decoded_states"] = effective_states(np.bincount(marginals.argmax(axis=1),
                                                                minlength=self.transitions.n_states))
        self.history.append(record)

    def _update_emission_prior(self, stats, zero_emissions):
        """beta tau from the emission restaurants (§5.5.3); the next tables read the family's prior."""
        emissions = emission_occupancy(stats[:-1].T, zero_emissions)
        beta, tau = update_emission_prior(self.family.beta, self.family.tau, emissions)
        self.family.set_prior(beta, tau)
        return beta

    # -- SCVI and svi-p ---------------------------------------------------------------------------------
    def minibatch_occupancy(self):
        """(method code, samples, emissions) of the q(C = 0) blocks a minibatch fills; None for svi-p."""
        if self.transitions.top_weights is not None:
            return None
        return self.method, self.n_samples, self.learn_emission_prior

    def after_step(self, counts, n_sequences, rho):
        """SCVI: one step of eq. 5.40 from the running counts and log q(C = 0) blocks; svi-p: the point
        estimate of the top level moves rho of the way to its optimum."""
        transitions = self.transitions
        start_counts, trans_counts = counts["start"].values(), counts["trans"].values()
        if transitions.top_weights is not None:
            stacked = np.vstack([start_counts[None], trans_counts])
            best = point_stick(transitions.top_weights, np.maximum(stacked, 0.0), transitions.sigma, self.gamma)
            transitions.top_weights[:] = (1.0 - rho) * transitions.top_weights + rho * best
            return
        zero = [np.exp(counts[name].values()) for name in ("zero_start", "zero_pairs", "zero_exits")]
        occupancy = transition_occupancy(start_counts, trans_counts, *zero, n_sequences)
        stochastic_update(transitions.sticks, occupancy, rho, self.learn_concentrations)

    def after_stochastic_pass(self, counts):
        """SCVI's batch update of beta tau after every pass (§5.5.3): the emission restaurants from the
        global counts and exp of the running log prod_t (1 - q(z_t = k)) (eq. 5.46).  Appends the pass's
        record to ``history``."""
        if self.transitions.top_weights is not None:
            return
        sticks = self.transitions.sticks
        stats = counts["stats"].values()
        record = {"gamma": sticks.gamma, "sigma": sticks.sigma}
        if self.learn_emission_prior:
            record["beta"] = self._update_emission_prior(stats, np.exp(counts["zero_emissions"].values()))
        record["effective_states"] = effective_states(self.family.state_totals(stats))
        self.history.append(record)


# -- merge and delete moves (Hughes, Kim and Sudderth 2015) -----------------------------------------------
# batch CVI proposes moves after every MOVE_EVERY passes (the first after pass 10): the MERGE_TRIES pairs
# of the highest merge_gain and the DELETE_TRIES states with the fewest expected tokens.  On Fig. 5.7's
# theta_pos data of seeds 2000-2009, a first try only after pass 50 or 100 settled later and left as many
# runs off four states; merges alone, the first acceptable one kept, lumped two true states into one in
# two of its ten datasets (1000 and 1005), which no later merge undoes
MOVE_EVERY = 10
MERGE_TRIES = 3
DELETE_TRIES = 3
# the best move is kept only if it still leads after CONFIRM_PASSES more passes from it and from the plain
# pass's state: one pass can favour a merge of two half-separated states (+1.25 nats of the learner's
# objective on dataset 1008's theta_pos at pass 70) whose lumped state no later move splits
CONFIRM_PASSES = 3
MERGES = (None, "auto")


def log_joint(parts, counts, prior=None):
    """log p(x, z) at the expected counts: every restaurant j = 0..K (the start row, then the states'
    rows) a Dirichlet-multinomial around sigma G[pi] (eq. 5.10) plus the emission family's collapsed
    log p(x | z) (eq. 3.24); ``prior`` (the transitions' by default) may give a state no weight, which
    then must have no counts."""
    start_counts, trans_counts, stats = counts
    weights, total = parts.transitions.prior()
    weights = weights if prior is None else prior
    rows = np.vstack([start_counts[None], trans_counts])
    weighted = weights > 0
    return (rules.dirichlet_log_marginal(rows[np.r_[True, weighted]][:, weighted], weights[weighted], total)
            + parts.family.log_marginal(stats))


def merge_gain(parts, counts, keep, gone):
    """How much more likely the expected counts are with states ``keep`` and ``gone`` as one:
    `log_joint` with the merged state's weight the sum of the two (the DP's aggregation), merged minus
    apart.  Positive when the two states' statistics look like one state's: the Bayesian test of
    whether two clusters share a parameter (Heller and Ghahramani 2005), which ranks the pairs a merge
    move proposes."""
    start_counts, trans_counts, stats = counts
    prior, _ = parts.transitions.prior()
    merged_start, merged_trans, merged_stats = start_counts.copy(), trans_counts.copy(), stats.copy()
    for table in (merged_start, merged_trans, merged_stats):
        table[..., keep] += table[..., gone]
        table[..., gone] = 0.0
    merged_trans[keep] += merged_trans[gone]
    merged_trans[gone] = 0.0
    merged_prior = prior.copy()
    merged_prior[keep] += merged_prior[gone]
    merged_prior[gone] = 0.0
    return (log_joint(parts, (merged_start, merged_trans, merged_stats), merged_prior)
            - log_joint(parts, counts, prior))


def collapsed_bound(parts, counts, marginals):
    """What a move is judged on: `log_joint` at the expected counts plus the entropy of every token's
    q(z_t), the collapsed bound E_q log p(x, z) + H[q] of Hughes, Kim and Sudderth (2015) with the
    expectation taken inside the counts (as CVB0 does) and q's pairs left out of the entropy.  Unlike
    the learner's own objective, a sum of leave-one-unit-out predictive log-likelihoods (eq.
    5.37-5.39), which scarcely charges a spare state (leave-one-out is not consistent for choosing a
    model's size: Shao 1993), it charges every state its marginal likelihood."""
    q = np.asarray(marginals, dtype=float)
    return log_joint(parts, counts) - float(np.sum(q * np.log(np.where(q > 0, q, 1.0))))


def merge_candidates(parts, counts, tries=MERGE_TRIES):
    """The ``tries`` pairs of used states (at least one expected token each) of the highest `merge_gain`,
    best first, as (gain, keep, gone): ``keep`` the one with more tokens."""
    start_counts, trans_counts, stats = counts
    tokens = parts.family.state_totals(stats)
    used = np.flatnonzero(tokens >= 1.0)
    scored = []
    for i, first in enumerate(used):
        for second in used[i + 1:]:
            keep, gone = (first, second) if tokens[first] >= tokens[second] else (second, first)
            scored.append((merge_gain(parts, counts, keep, gone), int(keep), int(gone)))
    scored.sort(key=lambda item: -item[0])
    return scored[:tries]


def delete_candidates(parts, counts, tries=DELETE_TRIES):
    """The ``tries`` used states (at least one expected token) with the fewest expected tokens, fewest
    first, as (tokens, state); none when only one state is used."""
    tokens = parts.family.state_totals(counts[2])
    used = np.flatnonzero(tokens >= 1.0)
    if used.size < 2:
        return []
    return [(float(tokens[state]), int(state)) for state in used[np.argsort(tokens[used], kind="stable")][:tries]]


@dataclass(eq=False)
class MovingSweep:
    """Batch CVI with merge and delete moves, the HDP-HMM's ``merge="auto"`` (Hughes, Kim and Sudderth
    2015): after every ``every`` passes the pass runs as usual from a saved state, then again from that
    state after each proposed move: a merge of one of the ``merge_tries`` pairs of `merge_candidates`
    (`SubchainSweep.merge_states`), or a delete of one of the ``delete_tries`` states of
    `delete_candidates` (`SubchainSweep.delete_state`: its mass given to the other states, the pass its
    restricted local step).  Of the moved passes, the one with the highest `collapsed_bound` is kept
    when that is no lower than the plain pass's, as Hughes et al. accept a move on the bound.  Not on
    the learner's own objective (the sum over units of log Z under the leave-one-unit-out surrogate
    parameters, eq. 5.37-5.39), which scarcely charges a spare state: on Fig. 5.7's theta_neg dataset
    1005 merging the two halves of a true state (1,700 and 800 tokens) gains 1,100-1,400 nats of bound
    but loses 1-4 nats of that objective for 390 passes.  Keeping the best rather than the first
    acceptable move matters: merging a state that holds parts of two true states into one of them can
    raise the score a little at once and lumps the two for good, where deleting it, or another merge,
    raises it more.  For the same reason the best move is kept only if, after ``confirm`` more passes
    from its state and from the plain pass's, its bound still leads (its "lead_later" in the record);
    the pass then continues from its one-pass state and reports that pass's own objective (``history_``
    is the learner's objective, which a kept move may lower).  Every pass runs under the same sticks, so
    the scores compare the local states alone; the pass's seconds include the trials.  Every trial is
    recorded in the pass's ``hyper_history_`` record under "moves"."""

    inner: object  # the plain pass, a `SubchainSweep`
    every: int = MOVE_EVERY
    merge_tries: int = MERGE_TRIES
    delete_tries: int = DELETE_TRIES
    confirm: int = CONFIRM_PASSES
    trials: list = field(default_factory=list, init=False)

    def proposals(self):
        """(kind, keep, gone, score) of every move to try: merges by `merge_gain`, deletes by tokens."""
        parts, counts = self.inner.parts, self.inner.current()
        return ([("merge", keep, gone, gain) for gain, keep, gone in merge_candidates(parts, counts, self.merge_tries)]
                + [("delete", None, gone, tokens) for tokens, gone in
                   delete_candidates(parts, counts, self.delete_tries)])

    def apply(self, kind, keep, gone):
        """Merge ``gone`` into ``keep``, the next pass under the merged prior weight (`HDPTransitions`), or
        delete ``gone``."""
        if kind == "merge":
            self.inner.merge_states(keep, gone)
            self.inner.parts.transitions.merged = keep, gone
        else:
            self.inner.delete_state(gone)

    def bound(self):
        """`collapsed_bound` of the current state, under the prior the pass ran with."""
        inner = self.inner
        return collapsed_bound(inner.parts, inner.current(), inner.marginals)

    def sweep(self, iteration):
        inner = self.inner
        self.trials = []
        moves = [] if (iteration + 1) % self.every else self.proposals()
        if not moves:
            return inner.sweep(iteration)
        before = inner.snapshot()
        plain = inner.sweep(iteration)
        plain_bound = self.bound()
        plain_state = inner.snapshot()
        best, best_objective, best_bound, kept = plain_state, plain, plain_bound, None
        for kind, keep, gone, score in moves:
            inner.restore(before)
            self.apply(kind, keep, gone)
            objective = inner.sweep(iteration)
            bound = self.bound()
            inner.parts.transitions.merged = None
            self.trials.append({"move": kind, "keep": keep, "gone": gone,
                                ("gain" if kind == "merge" else "tokens"): float(score),
                                "objective": float(objective), "objective_without": float(plain),
                                "bound": bound, "bound_without": plain_bound, "accepted": False})
            if bound >= best_bound:
                best, best_objective, best_bound, kept = inner.snapshot(), objective, bound, self.trials[-1]
        if kept is not None and self.confirm:
            kept["lead_later"] = self.lead_later(plain_state, best, iteration)
            if kept["lead_later"] < 0.0:
                kept, best, best_objective = None, plain_state, plain
        if kept is not None:
            kept["accepted"] = True
        inner.restore(best)
        return best_objective

    def lead_later(self, plain_state, moved_state, iteration):
        """The moved state's `collapsed_bound` minus the plain one's after ``confirm`` more passes from
        each."""
        inner = self.inner
        bounds = []
        for state in (moved_state, plain_state):
            inner.restore(state)
            for _ in range(self.confirm):
                inner.sweep(iteration)
            bounds.append(self.bound())
        return float(bounds[0] - bounds[1])

    def after_pass(self, iteration):
        self.inner.after_pass(iteration)
        if self.trials:
            self.inner.parts.occupancy.history[-1]["moves"] = self.trials

    def current(self):
        return self.inner.current()

    def attributes(self):
        return self.inner.attributes()
