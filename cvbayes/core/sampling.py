"""Random draws inside numba kernels: the samplers' categorical draw and per-unit generators.

Samplers draw with numba's own generator (separate from NumPy's; `seed_numba` seeds it).  Kernels that
run in parallel instead give every unit its own xorshift generator seeded by (seed, unit), so a draw
does not depend on the number of threads.
"""
import numpy as np
from numba import njit


@njit(cache=True)
def seed_numba(seed):
    """Seed numba's generator, which the samplers' `draw` uses."""
    np.random.seed(seed)


@njit(cache=True)
def draw(weights, n, power):
    """Index k < n with probability proportional to weights[k] ** power.

    ``power`` = 1 / temperature anneals a Gibbs sampler (Goldwater and Griffiths 2007); the weights are
    scaled by their peak first so that the power cannot underflow, and are left tempered in place.
    """
    if power != 1.0:
        peak = 0.0
        for k in range(n):
            peak = max(peak, weights[k])
        for k in range(n):
            weights[k] = (weights[k] / peak) ** power
    total = 0.0
    for k in range(n):
        total += weights[k]
    u = np.random.random() * total
    acc = 0.0
    last = n - 1
    for k in range(n):
        if weights[k] > 0.0:
            last = k
            acc += weights[k]
            if u < acc:
                return k
    return last


@njit(cache=True)
def splitmix64(x):
    """One splitmix64 step: a well-mixed 64-bit value from any seed."""
    x = (x + np.uint64(0x9E3779B97F4A7C15))
    z = x
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def unit_generator(seed, unit):
    """A xorshift64* state for ``unit``, independent of every other unit's (see `uniform`)."""
    state = np.empty(1, dtype=np.uint64)
    state[0] = splitmix64(splitmix64(np.uint64(seed)) ^ np.uint64(unit)) | np.uint64(1)
    return state


@njit(cache=True)
def uniform(state):
    """xorshift64* draw in [0, 1); ``state`` is a one-element uint64 array."""
    x = state[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    state[0] = x
    return np.float64((x * np.uint64(0x2545F4914F6CDD1D)) >> np.uint64(11)) * (1.0 / 9007199254740992.0)
