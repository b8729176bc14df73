"""The sampling schedule: collapsed Gibbs (eq. 3.25) and blocked Metropolis-Hastings (eq. 4.14-4.16).

A sampler redraws one site at a time from its predictive given every other site, the MEAN rule on the
others' counts.  ``resample_site(state, site, power)`` takes the site's counts out, draws its new value
(with `cvbayes.core.sampling.draw`, tempered by ``power`` = 1 / temperature) and puts the counts back;
it returns False when the site has no value of positive probability.
"""
from numba import njit


# inlined into the model's entry point: called as a function, it receives the unit's dispatcher as a
# value, whose address numba embeds unless LLVM happens to inline the call, and the entry point then
# cannot be cached (numba 0.68, any update with a loop of dynamic length)
@njit(cache=True, inline="always")
def gibbs(resample_site, state, order, power):
    """One sweep of ``resample_site`` over the sites in ``order``; returns the first site that could
    not be drawn, or -1."""
    for site in order:
        if not resample_site(state, site, power):
            return site
    return -1
