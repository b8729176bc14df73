"""The HMM's transition part: Dirichlet rows over the first state and over every state's successor.

The part beside the emission families (DESIGN.md; dynamax builds its HMMs of such parts): the start row
theta_0 and the K x K transition rows theta_j, each Dirichlet with pseudo-counts a_k and prior total A
(eq. 3.1-3.2): a_k = alpha and A = K alpha for the finite HMM (eq. 3.49), sigma G[pi_k] and sigma for
the HDP-HMM (eq. 5.38, whose part in `cvbayes.models.hdp` overrides `prior`).  Its statistics are the
expected start counts (K,) and transition counts (K, K); like a family it turns them into the tables of
a rule of `cvbayes.core.rules` and gives the terms of the objectives.
"""
import numpy as np

from ..core import rules


class Transitions:
    """Dirichlet start and transition rows of ``n_states`` states with the symmetric prior ``alpha``."""

    def __init__(self, n_states, alpha):
        self.n_states = int(n_states)
        self.alpha = float(alpha)

    def prior(self):
        """(a (K,), A): the pseudo-counts of every row and the total of their denominators."""
        return np.full(self.n_states, self.alpha), self.n_states * self.alpha

    def tables(self, start_counts, trans_counts, rule, total=None):
        """The start row and transition matrix of ``rule`` from counts; ``total`` replaces the sum of the
        prior row in the denominators (the HDP's sigma)."""
        prior_row = self.prior()[0]
        return (rules.dirichlet_table(rule, start_counts[None], prior_row, total)[0],
                rules.dirichlet_table(rule, trans_counts, prior_row, total))

    def log_prior(self, startprob, transmat):
        """log p(theta) of the rows up to a constant: the prior term of EM's MAP objective."""
        return rules.dirichlet_log_prior(startprob, self.alpha) + rules.dirichlet_log_prior(transmat, self.alpha)

    def kl(self, start_counts, trans_counts):
        """KL(q(theta) || p(theta)) of the rows whose posteriors have these counts: VB's penalty (eq. 3.11)."""
        return rules.dirichlet_kl(start_counts, self.alpha) + rules.dirichlet_kl(trans_counts, self.alpha)

    def log_marginal(self, start_counts, trans_counts):
        """log p(z | alpha) of hard counts: the Dirichlet-multinomial of eq. 3.24."""
        return (rules.dirichlet_log_marginal(start_counts[None], self.alpha)
                + rules.dirichlet_log_marginal(trans_counts, self.alpha))

    def draw_start(self, rng):
        """Random rows from the flat Dirichlet(1): thesis footnote 5's random start of EM and VB."""
        k = self.n_states
        return {"startprob": rng.dirichlet(np.ones(k)), "transmat": rng.dirichlet(np.ones(k), size=k)}

    def random_counts(self, rng, n_chains, n_transitions):
        """Exponential draws of eq. 3.106-3.107, scaled like the tallies of random states over
        ``n_chains`` chains and ``n_transitions`` transitions (the stochastic learners' random start)."""
        k = self.n_states
        return (rng.exponential(n_chains / k, size=k),
                rng.exponential(max(n_transitions, 1) / k ** 2, size=(k, k)))

    def check(self, params):
        """The ``startprob`` and ``transmat`` of a dict of parameters as float arrays, checked."""
        k = self.n_states
        startprob = np.asarray(params["startprob"], dtype=float)
        transmat = np.asarray(params["transmat"], dtype=float)
        if startprob.shape != (k,) or transmat.shape != (k, k):
            raise ValueError(f"startprob must have shape ({k},) and transmat ({k}, {k})")
        for name, rows in (("startprob", startprob[None]), ("transmat", transmat)):
            if np.any(rows < 0) or not np.allclose(rows.sum(axis=1), 1.0):
                raise ValueError(f"init['{name}'] rows must be probabilities that sum to 1")
        return startprob, transmat
