"""Special functions the numba kernels need and numba does not provide.

numba compiles ``math.lgamma`` but has no digamma, and the variational tables
(eq. 3.21-3.22, 4.12) and the LDA E-steps evaluate it inside compiled loops.
"""
import math

from numba import njit

# Reassociation lets LLVM vectorise the K-long reductions; no NaN/Inf
# assumptions are made, so a zero-probability sequence still shows up as -inf.
FAST = {"reassoc", "contract", "arcp", "nsz"}

# psi(x) = log x - 1/(2x) - sum_n B_2n / (2n x^2n); with x >= 10 the first
# omitted term is below 1e-16 relative
_ASYMPTOTIC_FROM = 10.0


@njit(cache=True)
def digamma(x):
    """psi(x) = d/dx log Gamma(x) for x > 0, to about 1e-15 relative.

    Shifts x up with psi(x) = psi(x + 1) - 1/x, then sums the asymptotic
    (Stirling) series.
    """
    shift = 0.0
    while x < _ASYMPTOTIC_FROM:
        shift -= 1.0 / x
        x += 1.0
    inv2 = 1.0 / (x * x)
    series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (
        1.0 / 240 - inv2 * (1.0 / 132 - inv2 * (691.0 / 32760 - inv2 / 12))))))
    return shift + math.log(x) - 0.5 / x - series
