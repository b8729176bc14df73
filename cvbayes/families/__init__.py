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


def family_from_config(config):
    """Rebuild a fitted family from its ``config()`` (model files)."""
    config = dict(config)
    name = config.pop("name")
    if name == "categorical":
        return Categorical(**config)
    if name == "gaussian":
        family = Gaussian(**config)
        family.n_dims = len(family.mean)
        return family
    raise ValueError(f"unknown emission family {name!r} in model file")


__all__ = ["Categorical", "Gaussian", "CATEGORICAL", "GAUSSIAN", "family_from_config", "make_family"]
