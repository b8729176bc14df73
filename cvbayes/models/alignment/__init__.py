"""Word alignment: IBM Model 1 and the HMM aligner with EM, VB, CVI-1, CVI-2, CGS, SVI and SCVI (thesis §3.8.3).

`model.Aligner` maps each algorithm to a schedule of `cvbayes.schedules` and a rule of `cvbayes.core.rules`
(`ALGORITHMS`); `structures` binds a model to its data for the batch and stochastic schedules,
`collapsed` and `gibbs` hold the numba units and sites of the leave-one-out and Gibbs schedules, and the
dynamic programs are in `cvbayes.chains.alignment` and `cvbayes.chains.jumps`.
"""
from .corpus import (ParallelCorpus, read_fast_align, read_gold_alignments, read_parallel, read_pharaoh,
                     write_pharaoh)
from .evaluate import score_alignment
from .model import ALGORITHMS, DEFAULT_ITERATIONS, MODELS, OBJECTIVES, Aligner, align
from .symmetrize import SYMMETRIZATIONS, symmetrize

__all__ = ["ALGORITHMS", "DEFAULT_ITERATIONS", "MODELS", "OBJECTIVES", "SYMMETRIZATIONS", "Aligner",
           "ParallelCorpus", "align", "read_fast_align", "read_gold_alignments", "read_parallel", "read_pharaoh",
           "score_alignment", "symmetrize", "write_pharaoh"]
