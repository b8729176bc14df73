"""Conjugate exponential-family emissions (thesis §3.7)."""
from .categorical import Categorical
from .full_gaussian import FullGaussian
from .gaussian import Gaussian
from .ops import CATEGORICAL, FULL_GAUSSIAN, GAUSSIAN, POISSON
from .poisson import Poisson

# emission="name" of the HMMs, and the "name" of a family's config() (model files)
FAMILIES = {"categorical": Categorical, "gaussian": Gaussian, "gaussian-full": FullGaussian, "poisson": Poisson}


def make_family(emission, beta):
    """Build an emission family from a name or return an instance as is."""
    if isinstance(emission, tuple(FAMILIES.values())):
        return emission
    if emission == "categorical":
        return Categorical(beta=beta)
    if emission in FAMILIES:
        return FAMILIES[emission]()
    raise ValueError(f"unknown emission family {emission!r}; use one of {', '.join(map(repr, FAMILIES))}")


def family_from_config(config):
    """Rebuild a fitted family from its ``config()`` (model files)."""
    config = dict(config)
    name = config.pop("name")
    if name not in FAMILIES:
        raise ValueError(f"unknown emission family {name!r} in model file")
    family = FAMILIES[name](**config)
    if name != "categorical":
        family.n_dims = len(config["rate"] if name == "poisson" else config["mean"])
    return family


__all__ = ["Categorical", "Gaussian", "FullGaussian", "Poisson", "CATEGORICAL", "GAUSSIAN", "FULL_GAUSSIAN", "POISSON",
           "FAMILIES", "family_from_config", "make_family"]
