"""cvbayes: collapsed variational inference for the models of computational linguistics."""
import os

# numba's OpenMP threads wait for work by spinning; on a loaded machine a spinning thread holds the core
# that the thread it waits for needs (benchmarks/README.md, threads).  Passive waiting costs microseconds
# on a quiet machine.  Set before numba first loads OpenMP; a user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from .data import Corpus, Vocabulary, read_conllu, read_tagged, read_text
from .families import Categorical, FullGaussian, Gaussian, Poisson
from .models.base import BayesModel
from .models.hdp_hmm import HDPHMM
from .models.hmm import HMM
from .models.dmv import DMV
from .models.lda import LDA
from .models.pcfg import PCFG
from .models.pcfg_la import PCFGLA
from .models.adaptor import AdaptorGrammar
from .models.units import AcousticUnits
from .models.alignment import Aligner
from .models.channel import EditChannel
from .models.noisy_words import NoisyWords
from .models.discovery import LexiconDiscovery
from .core.units import ZeroProbabilityError
from .schedules import IterationRecord

__version__ = "0.1.0"

__all__ = ["BayesModel", "HMM", "HDPHMM", "LDA", "PCFG", "DMV", "PCFGLA", "Aligner", "AdaptorGrammar", "AcousticUnits",
           "EditChannel", "NoisyWords", "LexiconDiscovery",
           "IterationRecord", "ZeroProbabilityError", "Corpus", "Vocabulary", "Categorical", "Gaussian", "FullGaussian", "Poisson",
           "read_text",
           "read_tagged", "read_conllu"]
