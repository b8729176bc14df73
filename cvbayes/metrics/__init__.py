"""Evaluation metrics: each module's public names, re-exported."""

from . import dependency, parsing, segmentation, speech, tagging, tde
from .dependency import *  # noqa: F403
from .parsing import *  # noqa: F403
from .segmentation import *  # noqa: F403
from .speech import *  # noqa: F403
from .tagging import *  # noqa: F403
from .tde import *  # noqa: F403

__all__ = [*dependency.__all__, *parsing.__all__, *segmentation.__all__, *speech.__all__, *tagging.__all__,
           *tde.__all__]
