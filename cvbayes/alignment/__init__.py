"""Word alignment: IBM Model 1 and the HMM aligner with EM, VB, CVI-1, CVI-2 and CGS (thesis §3.8.3)."""
from .corpus import (ParallelCorpus, read_fast_align, read_gold_alignments, read_parallel, read_pharaoh,
                     write_pharaoh)
from .evaluate import score_alignment
from .models import ALGORITHMS, DEFAULT_ITERATIONS, MODELS, OBJECTIVES, Aligner, IterationRecord, align
from .symmetrize import SYMMETRIZATIONS, symmetrize

__all__ = ["ALGORITHMS", "DEFAULT_ITERATIONS", "MODELS", "OBJECTIVES", "SYMMETRIZATIONS", "Aligner",
           "IterationRecord", "ParallelCorpus", "align", "read_fast_align", "read_gold_alignments",
           "read_parallel", "read_pharaoh", "score_alignment", "symmetrize", "write_pharaoh"]
