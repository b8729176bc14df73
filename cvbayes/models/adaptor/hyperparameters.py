"""The Pitman-Yor discount a and concentration b of every adapted nonterminal, learned under Johnson and
Goldwater's (2009) prior, a ~ Beta(1, 1), b ~ Gamma(shape 0.01, scale 100) (py-cfg's ``-g 100 -h 0.01``,
`cvbayes.core.restaurants.CONCENTRATION_PRIOR`): their posterior mode given the learner's
expected statistics (vb and cvi: `maximise`) or slice-sampled given the seating (mcmc:
`resample_py_parameters`).

As in Johnson's py-cfg, a nonterminal whose a starts at 0 stays a Dirichlet process: only its b is learned.
"""
import math

import numpy as np
from scipy.optimize import minimize

from ...core.restaurants import log_hyperprior, seating_log_likelihood, seating_statistics


def maximise(log_likelihood, a, b, learn_discount):
    """The mode of the posterior of (a, log b), log_likelihood(a, b) + `log_hyperprior`(a, b) + log b (the
    Jacobian of b = e^u), over a in [0, 0.99] (a = 0 unless ``learn_discount``) and log b in [-8, 12], by
    L-BFGS-B from (a, b); returns (a, b).

    In log b because the prior's density in b, b^(shape - 1) e^(-b / scale) with shape 0.01, diverges at
    b = 0, where the PY likelihood with a > 0 stays finite: a mode in b would be b -> 0 (on a tiny corpus
    it was, at the bound); in log b the prior is e^(shape u - e^u / scale), whose mode is finite."""
    def loss(point):
        a, b = point[0], math.exp(point[1])
        return -(log_likelihood(a, b) + log_hyperprior(a, b) + point[1])

    start = np.array([min(a, 0.98), math.log(max(b, 1e-3))])
    discounts = (0.0, 0.99) if learn_discount else (0.0, 0.0)
    found = minimize(loss, start, method="L-BFGS-B", bounds=[discounts, (-8.0, 12.0)])
    return float(found.x[0]), math.exp(float(found.x[1]))


def resample_py_parameters(sizes, a, b, rng, sample_discount=True, n_rounds=5):
    """(a, b) after ``n_rounds`` alternations of slice-sampling b | a and a | b under the posterior
    p(a, b | seating) (`log_seating_probability` plus `log_hyperprior`; Johnson and Goldwater 2009).
    With ``sample_discount`` False, a stays as it is (0: a Dirichlet process).

    b is drawn as log b (its density times the Jacobian b), with slices of width 1 in log b: under the
    vague prior b ranges over orders of magnitude (py-cfg starts it at 1e4), which steps of width 1 in b
    crossed in about a hundred sweeps."""
    statistics = seating_statistics(sizes)

    def log_posterior(a, b):
        prior = log_hyperprior(a, b)
        return prior if prior == -math.inf else prior + seating_log_likelihood(a, b, *statistics)

    for _ in range(n_rounds):
        b = math.exp(slice_sample(lambda u: log_posterior(a, math.exp(u)) + u, math.log(b), 1.0, rng))
        if sample_discount:
            a = slice_sample(lambda v: log_posterior(v, b), a, 0.1, rng)
    return a, b


def slice_sample(log_density, x, width, rng, max_steps=100):
    """One univariate slice-sampling update of x (Neal 2003, "Slice sampling": stepping out, shrinkage).

    The slice {v : log_density(v) > log_density(x) - E}, E ~ Exp(1), is bracketed by stepping out in
    steps of ``width`` (at most ``max_steps`` in all, split at random between the two sides) and the new
    point drawn uniformly in the bracket, shrinking it towards x at every rejection.  log_density is
    -inf outside the support.  Draws come from `rng` (a numpy Generator) only.
    """
    level = log_density(x) + math.log1p(-rng.random())
    left = x - width * rng.random()
    right = left + width
    steps_left = int(max_steps * rng.random())
    steps_right = max_steps - 1 - steps_left
    while steps_left > 0 and log_density(left) > level:
        left -= width
        steps_left -= 1
    while steps_right > 0 and log_density(right) > level:
        right += width
        steps_right -= 1
    while True:
        candidate = left + rng.random() * (right - left)
        if log_density(candidate) > level:
            return candidate
        if candidate < x:
            left = candidate
        else:
            right = candidate
