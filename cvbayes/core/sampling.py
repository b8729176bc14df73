"""Random draws: the samplers' categorical draw and per-unit generators (numba), and Dirichlet draws
in log space (NumPy).

Samplers draw with numba's own generator (separate from NumPy's; `seed_numba` seeds it).  Kernels that
run in parallel instead give every unit its own xorshift generator seeded by (seed, unit), or take
uniforms drawn beforehand (`pick`), so a draw does not depend on the number of threads.
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
    return pick(weights, n, np.random.random())


@njit(cache=True)
def pick(weights, n, u):
    """Index k < n with probability proportional to weights[k], given a uniform ``u`` in [0, 1).

    `draw` passes numba's own uniform; parallel samplers pass uniforms drawn beforehand (the beam
    sampler's backward draws), so that a run does not depend on the number of threads.
    """
    total = 0.0
    for k in range(n):
        total += weights[k]
    target = u * total
    acc = 0.0
    last = n - 1
    for k in range(n):
        if weights[k] > 0.0:
            last = k
            acc += weights[k]
            if target < acc:
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
    state[0], u = next_uniform(state[0])
    return u


@njit(cache=True)
def next_uniform(x):
    """(the next xorshift64* state after ``x``, its draw in [0, 1)): `uniform` on a state held in a
    local variable, which a hot loop keeps in a register (an array's element it reloads after every
    store the compiler cannot prove elsewhere)."""
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    return x, np.float64((x * np.uint64(0x2545F4914F6CDD1D)) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


# -- Dirichlet draws in log space (NumPy; the beam sampler's sticks, rows and emissions) -----------

_TINY = np.finfo(float).tiny


def logsumexp(values, axis=None, keepdims=False):
    """log sum exp (scipy's is slow on the small arrays the samplers draw every iteration)."""
    values = np.asarray(values, dtype=float)
    top = np.max(values, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    out = np.log(np.sum(np.exp(values - top), axis=axis, keepdims=True)) + top
    return out if keepdims else (np.squeeze(out, axis=axis) if axis is not None else out.item())


def log_gamma_draws(rng, shape):
    """log of Gamma(shape, 1) draws from the NumPy Generator ``rng``, exact for tiny shapes.

    For shape < 1 uses G = G' U^(1/shape) with G' ~ Gamma(shape + 1), kept in logs so that draws
    below the float range (sigma pi_k can be far below 1e-300) stay finite.
    """
    shape = np.maximum(np.asarray(shape, dtype=float), _TINY)
    small = shape < 1.0
    draws = np.log(rng.standard_gamma(np.where(small, shape + 1.0, shape)))
    log_u = np.log1p(-rng.random(shape.shape))  # log of U in (0, 1]
    with np.errstate(over="ignore"):  # log_u / shape -> -inf for shapes near 1e-308
        return np.where(small, draws + log_u / shape, draws)


def log_dirichlet_draws(rng, alpha):
    """log of Dirichlet(alpha) draws, one per row of ``alpha`` (last axis), normalised Gamma draws."""
    logs = log_gamma_draws(rng, alpha)
    return logs - logsumexp(logs, axis=-1, keepdims=True)
