"""Conjugate exponential-family emissions (thesis §3.7)."""
from .categorical import Categorical
from .gaussian import Gaussian
from .ops import CATEGORICAL, GAUSSIAN


def make_family(emission, beta):
    """Build an emission family from a name or return an instance as is."""
    if isinstance(emission, (Categorical, Gaussian)):
        return emission
    if emission == "categorical":
        return Categorical(beta=beta)
    if emission == "gaussian":
        return Gaussian()
    raise ValueError(f"unknown emission family {emission!r}; use 'categorical' or 'gaussian'")


__all__ = ["Categorical", "Gaussian", "CATEGORICAL", "GAUSSIAN", "make_family"]
