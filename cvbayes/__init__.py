"""cvbayes: collapsed variational inference for the models of computational linguistics."""
from .data import Corpus, Vocabulary, read_conllu, read_tagged, read_text
from .families import Categorical, Gaussian
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
from .core.units import ZeroProbabilityError
from .schedules import IterationRecord

__version__ = "0.1.0"

__all__ = ["BayesModel", "HMM", "HDPHMM", "LDA", "PCFG", "DMV", "PCFGLA", "Aligner", "AdaptorGrammar", "AcousticUnits",
           "IterationRecord", "ZeroProbabilityError", "Corpus", "Vocabulary", "Categorical", "Gaussian", "read_text",
           "read_tagged", "read_conllu"]
