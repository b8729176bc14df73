"""The two semirings of the tree charts, as compile-time constants (numba).

Every chart of `cvbayes.trees` is one dynamic program written once over a semiring (Goodman 1999): the
sum-product semiring gives the inside values of thesis eq. 4.8 (log Z, and with the outside pass the
expected counts of eq. 4.9), the max-product semiring the best derivation (CKY, Viterbi).  A routine
takes ``viterbi`` (bool) as its first argument and reads it only through these helpers; it is
declared ``inline="always"`` and called with a literal from one thin entry point per semiring, so
numba inlines its IR there and LLVM folds every branch on ``viterbi``: each semiring compiles to its
own loop, with no test left in it.

Sum runs in **scaled space** (values are probabilities relative to a cell's scale, ``+`` and ``*``),
max in **log space** (``max`` and ``+``).  A routine's top-down pass reads one tree off the chart it
filled with the same flag: the argmax under max, a draw from the posterior under sum
(`offer`).
"""
import math

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def zero(viterbi):
    """The additive identity: 0 (sum) or -inf (max, in logs)."""
    return -np.inf if viterbi else 0.0


@njit(cache=True, inline="always")
def one(viterbi):
    """The multiplicative identity: 1 (sum) or 0 (max, in logs)."""
    return 0.0 if viterbi else 1.0


@njit(cache=True, inline="always")
def plus(viterbi, a, b):
    return max(a, b) if viterbi else a + b


@njit(cache=True, inline="always")
def times(viterbi, a, b):
    return a + b if viterbi else a * b


@njit(cache=True, inline="always")
def lift(viterbi, weight, reference):
    """A positive weight in the semiring: log weight (max), or weight / exp(reference) (scaled sum)."""
    return math.log(weight) if viterbi else math.exp(math.log(weight) - reference)


@njit(cache=True, inline="always")
def offer(viterbi, value, target):
    """One option of a top-down choice, offered in a fixed order: returns (take, done, target).

    Max: ``target`` is the best value so far; the option is taken when it beats it (the first maximum
    wins ties) and the choice is never done early.  Sum: ``target`` is a uniform draw times the
    options' total; every option is taken in turn (so the last one absorbs rounding) and the choice
    is done once the draw falls inside it (Goodman 1998's top-down sampling).
    """
    if viterbi:
        if value > target:
            return True, False, value
        return False, False, target
    target -= value
    return True, target < 0.0, target
