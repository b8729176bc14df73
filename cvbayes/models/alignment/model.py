"""Word alignment with IBM Model 1 and the HMM aligner, trained seven ways (thesis §3.8.3).

Models (both align each target word to one source position or to NULL):

* IBM Model 1 (Brown et al. 1993): a_j uniform over {NULL, 0 .. I-1}, then e_j ~ t(. | f_{a_j});
* the HMM aligner (Vogel et al. 1996) with NULL as Och and Ney (2003): a_j depends on the previous real
  position through a bucketed jump width, NULL words take a fixed probability p0 (``null_prob``) and
  remember the last real position (chains/alignment.py, chains/jumps.py).

Dirichlet priors (``prior``, by default `default_prior`: 1e-3 for the collapsed algorithms, the thesis's 0.1
for the others) sit on every translation row t(. | f) (over the V_e target words) and on the jump buckets.

Algorithms (the thesis's shortcut from EM to CVI, DESIGN.md: one dynamic program per model; an algorithm
is a schedule of `cvbayes.schedules` and a rule of `cvbayes.core.rules`, `ALGORITHMS`):

* ``em``: batch, MAP tables (with prior <= 1 the MLE), the GIZA++ pipeline;
* ``vb``: batch, mean-field VB (Riley and Gildea 2012; thesis eq. 3.20-3.22): the E-step runs on
  exp(E[log t]) and exp(E[log theta]);
* ``cvi1``: leave-one-out over target tokens (eq. 3.28-3.39); exactly CVB0 for IBM1, for the HMM see
  `collapsed.hmm_token_update` for the approximation;
* ``cvi2``: leave-one-out over sentence pairs (eq. 3.44-3.50);
* ``cgs``: collapsed Gibbs sampling (eq. 3.25), a systematic scan over the target words, no annealing;
  the links come from the conditional distributions averaged over the last half of the final model's
  sweeps;
* ``svi``, ``scvi``: the stochastic schedule on minibatches of sentence pairs (§3.7.2, §3.8.4) with VB's
  and the posterior mean's tables: the translation slots, their row totals and the jump buckets decay as
  N <- (1 - rho) N + rho (pairs / batch) E[C^B], rho = (tau0 + m)^-kappa.

Every algorithm runs IBM1 first and hands its statistics to the HMM, in one run of its schedule
(`structures.Stages`; the stochastic schedule keeps counting its steps across the two).  IBM1 starts
from uniform alignment posteriors (the first EM iteration is the E-step of a uniform table); CGS starts
from a uniform random alignment (``random_state``), SVI and SCVI draw their minibatches with
``random_state``, and the other algorithms do not use it.

Decoding: for every target word, the candidate (source position or NULL) with the largest posterior
marginal; a word whose best candidate is NULL gets no link.
"""
from __future__ import annotations

import numpy as np

from ...chains.alignment import argmax_segments
from ...core.rules import MAP, MEAN, VB, check_prior
from ...data.vocabulary import Vocabulary
from ...schedules import Algorithm, batch, gibbs, leave_one_out, stochastic
from ..base import BayesModel
from .corpus import ParallelCorpus
from .index import AlignmentData, build_index, cell_chunks
from .priors import AlignmentPriors, Pseudocounts, read_priors
from .structures import (AlignmentStructure, Stages, StagedBatch, StagedMinibatches, StagedSampler, StagedSweep,
                         Statistics, Tables)
from .symmetrize import SYMMETRIZATIONS, symmetrize

__all__ = ["ALGORITHMS", "COLLAPSED", "DEFAULT_ITERATIONS", "MODELS", "OBJECTIVES", "Aligner", "align",
           "default_prior"]

MODELS = ("ibm1", "hmm")

# the unit is what a collapsed update or a Gibbs draw visits, what a minibatch samples, or (batch) the
# unit of the parallel E-step
ALGORITHMS = {
    "em": Algorithm(batch, MAP, "pair", "the GIZA++ pipeline (Och and Ney 2003)"),
    "vb": Algorithm(batch, VB, "pair", "Riley and Gildea 2012; thesis eq. 3.20-3.22"),
    "cvi1": Algorithm(leave_one_out, MEAN, "token", "thesis eq. 3.28-3.39"),
    "cvi2": Algorithm(leave_one_out, MEAN, "pair", "thesis eq. 3.44-3.50"),
    "cgs": Algorithm(gibbs, MEAN, "pair", "thesis eq. 3.25; Gal and Blunsom 2013"),
    "svi": Algorithm(stochastic, VB, "pair", "thesis §3.7.2"),
    "scvi": Algorithm(stochastic, MEAN, "pair", "thesis §3.7.2, §3.8.4"),
}

# (IBM1, HMM) iterations (passes for svi and scvi).  EM and VB: GIZA++'s 5 + 5 (Och and Ney 2003), as the
# thesis runs them; CVI-1: 3 + 3, the thesis's choice on validation data (§3.8.3); CVI-2 converges at
# least as fast, so it gets the same; CGS: the 50 sweeps per model of Gal and Blunsom (2013) that the
# thesis uses; SVI as many passes as VB and SCVI as CVI-2 (on the Greek-English Gospels, SCVI with 500
# pairs a minibatch and kappa = 0.7 reaches CVI-2's AER in 2 + 2 passes).
DEFAULT_ITERATIONS = {"em": (5, 5), "vb": (5, 5), "cvi1": (3, 3), "cvi2": (3, 3), "cgs": (50, 50),
                      "svi": (5, 5), "scvi": (3, 3)}

OBJECTIVES = {
    "em": "log p(e | f, t, theta) + log p(t, theta) (the log-likelihood when prior <= 1) of the tables "
          "the iteration's E-step ran on",
    "vb": "evidence lower bound: sum log Z under exp(E[log .]) minus KL(q(t, theta) || p(t, theta))",
    "cvi1": "sum over target words of the update's log normaliser (a leave-one-word-out predictive "
            "log-likelihood)",
    "cvi2": "sum over sentence pairs of log p(e | f) under the surrogate parameters (a leave-one-pair-out "
            "predictive log-likelihood, eq. 3.47)",
    "cgs": "collapsed log joint log p(e, a | f) of the sample (for the HMM with its jump buckets, eq. 3.24)",
    "svi": "per pass, the minibatches' log p(e | f) under exp(E[log .]) of the counts before each step, "
           "per target token",
    "scvi": "per pass, the minibatches' log p(e | f) under the posterior-mean tables of the counts before "
            "each step, per target token",
}

# The default prior: for the collapsed algorithms the best measured on the Greek-English Gospels, 5-6 AER
# points below the thesis's 0.1 (docs/results/align_nt/development.md); em, vb and svi keep 0.1 (below 0.01,
# VB's exp E[log t] underflows; EM's MAP with a prior <= 1 is the MLE whatever it is)
COLLAPSED = ("cvi1", "cvi2", "cgs", "scvi")
COLLAPSED_PRIOR = 1e-3
OTHER_PRIOR = 0.1


def default_prior(algorithm: str) -> float:
    """The Dirichlet concentration ``algorithm`` uses when none is given: `COLLAPSED_PRIOR` (1e-3) for the
    collapsed algorithms (cvi1, cvi2, cgs, scvi), `OTHER_PRIOR` (0.1, the thesis's §3.8.3) for em, vb, svi."""
    return COLLAPSED_PRIOR if algorithm in COLLAPSED else OTHER_PRIOR


NULL_PROB = 0.2   # Och and Ney (2003) tune p0 near 0.2; fixed, not learned
MAX_JUMP = 7      # jump widths beyond +-7 share a bucket
BATCH_SIZE = 500  # sentence pairs a minibatch (svi, scvi)
KAPPA = 0.7       # rho_m = (tau0 + m)^-kappa; the thesis's SCVI runs use kappa in [0.5, 1) and tau0 = 1
TAU0 = 1.0


def _iterations(algorithm: str, model: str, n_iter) -> tuple[tuple[str, int], ...]:
    if n_iter is None:
        n_ibm1, n_hmm = DEFAULT_ITERATIONS[algorithm]
    elif isinstance(n_iter, (int, np.integer)):
        n_ibm1 = n_hmm = int(n_iter)
    else:
        pair = list(n_iter) if isinstance(n_iter, (tuple, list)) else []
        if len(pair) != 2 or any(int(n) != n for n in pair):
            raise ValueError(f"n_iter takes None, an int or (ibm1_iters, hmm_iters), got {n_iter!r}")
        n_ibm1, n_hmm = (int(n) for n in pair)
    if n_ibm1 < 0 or n_hmm < 0 or (model == "ibm1" and n_ibm1 == 0) or (model == "hmm" and n_hmm == 0):
        raise ValueError(f"need a positive number of iterations for the final model, got {n_iter!r}")
    return (("ibm1", n_ibm1),) if model == "ibm1" else (("ibm1", n_ibm1), ("hmm", n_hmm))


class Aligner(BayesModel):
    """Align target words to source words (fast_align's forward direction).

    Parameters
    ----------
    model : {"hmm", "ibm1"}
    algorithm : {"em", "vb", "cvi1", "cvi2", "cgs", "svi", "scvi"}
    n_iter : None, int or (int, int)
        Iterations (passes for svi and scvi) of IBM1 and of the HMM; an int sets both; None uses
        `DEFAULT_ITERATIONS`.
    prior : float, optional
        Symmetric Dirichlet concentration on every translation row and on the jump buckets; None (the
        default) takes `default_prior` of the algorithm: 1e-3 for cvi1, cvi2, cgs and scvi, 0.1 (the
        thesis's, §3.8.3) for em, vb and svi.
    random_state : int
        Seeds the Gibbs sampler and the minibatches of svi and scvi (the others are deterministic);
        ``seed`` before (deprecated).
    null_prob : float
        p0, the HMM's fixed probability of a jump to NULL; 0 leaves NULL out of the HMM (fast_align's
        ``-N``; IBM1, which starts it, keeps its NULL word).
    max_jump : int
        M: jump widths are clipped to [-M, M] (2M + 1 buckets).
    batch_size, kappa, tau0 : int, float, float
        svi and scvi: sentence pairs a minibatch and the step size rho_m = (tau0 + m)^-kappa.
    n_init : int
        Restarts from seeds random_state, random_state + 1, ...; the best last objective is kept.
    priors : None, path or `priors.AlignmentPriors`
        Prior knowledge as eflomal's ``--priors`` file gives it (models/alignment/priors.py): each entry's
        alpha is added to ``prior``, the pseudo-count of its translation pair or jump bucket, for every
        algorithm (em: MAP under these pseudo-counts).  The Aligner uses the lexical entries as (source,
        target) and the forward jumps (HMMF); for the reverse direction pass ``priors.reversed()``.
        ``priors_used_`` counts the lexical entries whose words the corpus has.

    ``fit(corpus)`` takes a `ParallelCorpus` and `BayesModel.fit`'s arguments; afterwards `links` gives its
    alignment.

    Attributes
    ----------
    history_ : list of cvbayes.schedules.IterationRecord
        (iteration, objective, seconds, stage) per iteration, ``stage`` "ibm1" or "hmm"; `OBJECTIVES`
        says what the objective is for each algorithm.
    statistics_ : the final expected counts (`structures.Statistics`).
    seconds_ : float
        Wall time of `fit`, indexing included.
    """

    MODEL_NAME = "aligner"
    ALGORITHMS = ALGORITHMS
    OBJECTIVES = OBJECTIVES
    FITTED = "statistics_"

    def __init__(self, model: str = "hmm", algorithm: str = "cvi1", n_iter=None, prior: float | None = None,
                 random_state: int = 0, *, null_prob: float = NULL_PROB, max_jump: int = MAX_JUMP,
                 batch_size: int = BATCH_SIZE, kappa: float = KAPPA, tau0: float = TAU0, n_init: int = 1,
                 priors=None, seed: int | None = None) -> None:
        self._keep_params(locals())
        if model not in MODELS:
            raise ValueError(f"unknown model {model!r}; choose from {', '.join(MODELS)}")
        self._check_learner("n_init")
        if prior is None:
            prior = default_prior(algorithm)
        check_prior("prior", prior)
        if not 0.0 <= null_prob < 1.0:
            raise ValueError(f"null_prob must lie in [0, 1), got {null_prob}")
        if max_jump < 1:
            raise ValueError(f"max_jump must be at least 1, got {max_jump}")
        if batch_size < 1 or not kappa >= 0 or not tau0 > 0:
            raise ValueError(f"need batch_size >= 1, kappa >= 0 and tau0 > 0, got {batch_size}, {kappa}, {tau0}")
        self.stages = _iterations(algorithm, model, n_iter)
        self.prior = float(prior)
        self.null_prob = float(null_prob)
        self.max_jump = int(max_jump)
        self.batch_size = int(batch_size)
        self.kappa = float(kappa)
        self.tau0 = float(tau0)
        self.priors = priors if priors is None or isinstance(priors, AlignmentPriors) else read_priors(priors)

    @property
    def n_buckets(self) -> int:
        """2M + 1 jump buckets (chains/jumps.py)."""
        return 2 * self.max_jump + 1

    @property
    def seconds_(self) -> float:
        """Wall time of `fit`, indexing included (``fit_seconds_``)."""
        return self.fit_seconds_

    # -- fit's hooks -------------------------------------------------------------------------------------
    def _n_passes(self):
        return sum(n for _, n in self.stages)

    def _prepare(self, corpus: ParallelCorpus, y=None) -> AlignmentData:
        """The co-occurrence index of the corpus (`index.build_index`)."""
        self._n_pairs = len(corpus)
        self._data = build_index(corpus)
        self.vocabularies_ = (corpus.source_vocabulary, corpus.target_vocabulary)
        self._bind_priors()
        if self.priors is not None:
            self.priors_used_ = self.priors.used(corpus)
        return self._data

    def _bind_priors(self):
        self._pseudo = Pseudocounts(self._data, self.prior, self.max_jump, self.priors, self.vocabularies_)

    def _fingerprint(self, data):
        arrays = data.pairs, data.src_ids, data.src_offsets, data.tgt_ids, data.tgt_offsets
        if self.priors is None:
            return arrays
        # a priors file read again may have changed: its pseudo-counts belong to the run's identity
        pseudo = self._pseudo
        return (*arrays, np.atleast_1d(pseudo.slot), np.atleast_1d(pseudo.row), pseudo.jumps)

    def _batch(self, data, run):
        structure = StagedBatch(data, Stages(self.stages), self._pseudo, self.null_prob, self.max_jump, run.algorithm,
                                run.checkpoint)
        return structure, structure.start, None

    def _collapsed(self, data, run):
        return StagedSweep(data, Stages(self.stages), run.how.unit, self._pseudo, self.null_prob, self.max_jump,
                           run.algorithm, run.checkpoint)

    def _sampler(self, data, run):
        return StagedSampler(data, Stages(self.stages), self._pseudo, self.null_prob, self.max_jump, run.algorithm,
                             run.rng, run.checkpoint)

    def _stochastic(self, data, run):
        return StagedMinibatches(data, Stages(self.stages), run.how.rule, self._pseudo, self.null_prob, self.max_jump,
                                 run.algorithm, run.checkpoint)

    def _set_fitted(self, statistics, rule, data=None):
        self.statistics_ = Statistics(*statistics)

    # -- files: the fitted statistics, the training pairs' index and their posteriors (the links) ---------
    _DATA = ("pairs", "src_ids", "src_offsets", "tgt_ids", "tgt_offsets", "cell_offsets", "cell_slot", "slot_row")

    def _saved(self):
        data = self._data
        passes = dict(self.stages)
        meta = {"params": {**self.get_params(), "n_iter": [passes.get("ibm1", 0), passes.get("hmm", 0)],
                           "prior": self.prior, "priors": None if self.priors is None else self.priors.to_json()},
                "n_pairs": self._n_pairs, "types": [data.n_source_types, data.n_target_types],
                "vocabularies": [vocabulary.to_json() for vocabulary in self.vocabularies_]}
        arrays = {name: getattr(data, name) for name in self._DATA}
        arrays.update(cells=self._cells, **{f"statistics_{name}": block
                                            for name, block in self.statistics_._asdict().items()})
        return meta, arrays

    @classmethod
    def _from_saved(cls, meta, arrays, path):
        params = meta["params"]
        priors = params.get("priors")
        model = cls(**{**params, "n_iter": tuple(params["n_iter"]),
                       "priors": None if priors is None else AlignmentPriors.from_json(priors)})
        model._n_pairs = meta["n_pairs"]
        model._data = AlignmentData(*(arrays[name] for name in cls._DATA), *meta["types"],
                                    cell_chunks(arrays["tgt_offsets"], arrays["cell_offsets"]))
        model.vocabularies_ = tuple(Vocabulary.from_json(vocabulary) for vocabulary in meta["vocabularies"])
        model._cells = arrays["cells"]
        model.statistics_ = Statistics(*(arrays[f"statistics_{name}"] for name in Statistics._fields))
        model._bind_priors()
        return model

    # -- results -----------------------------------------------------------------------------------------

    def _final_model(self, cells: np.ndarray) -> tuple[AlignmentStructure, Tables]:
        """The fitted model on the training data, writing posteriors into ``cells``, and its final tables:
        MAP (em) or the posterior mean (every other algorithm) of the final expected counts."""
        structure = AlignmentStructure(self._data, self.stages[-1][0], self._pseudo, self.null_prob, self.max_jump,
                                       cells, self.algorithm)
        return structure, structure.tables(self.statistics_, MAP if self.algorithm == "em" else MEAN)

    def translation_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The final translation table t(e | f) at every stored entry (what fast_align's ``-p`` writes).

        An entry is stored for every (source word or NULL, target word) that share a training pair.  The
        table is em's MAP estimate (with prior <= 1 the MLE) or, for every other algorithm, the posterior
        mean (C_fe + prior) / (C_f. + V_e prior) of the final counts (thesis eq. 3.18, 3.49): the last
        E-step's for em and vb, the collapsed statistics for cvi1 and cvi2, the last sample's for cgs, the
        decayed counts for svi and scvi (for vb and svi, not the exp E[log t] of their E-steps, which does
        not sum to one).

        Returns
        -------
        source, target : int arrays
            Ids in the fitted corpus's vocabularies; NULL's source id is -1.  Sorted by source id (NULL
            last), then target id.
        log_prob : float array
            log t(target | source).
        """
        self._check_fitted()
        _, tables = self._final_model(np.zeros(0, dtype=np.float32))
        data = self._data
        target = np.empty(data.n_slots, dtype=np.int32)
        n_cand = np.repeat(np.diff(data.src_offsets) + 1, np.diff(data.tgt_offsets))
        target[data.cell_slot] = np.repeat(data.tgt_ids, n_cand)
        source = np.where(data.slot_row == data.n_source_types, -1, data.slot_row).astype(np.int32)
        with np.errstate(divide="ignore"):
            return source, target, np.log(tables.translation)

    def pair_log_likelihoods(self) -> np.ndarray:
        """log p(e | f) of every pair of the fitted corpus under the final tables (`translation_table`, and
        for the HMM the jump distribution of the same rule): one E-step (thesis eq. 3.16-3.17) on them, what
        fast_align's ``-s`` prints without its length model.  NaN for pairs with an empty side (not
        aligned)."""
        self._check_fitted()
        structure, tables = self._final_model(np.empty(self._cells.shape[0], dtype=np.float32))
        out = np.full(self._n_pairs, np.nan)
        if self._data.n_pairs:
            out[self._data.pairs] = structure.pair_log_likelihoods(tables)
        return out

    def links(self) -> list[set[tuple[int, int]]]:
        """The fitted corpus's alignment: per pair, the set of (source_i, target_j) links.

        Each target word links to its highest-posterior source position; words whose best candidate is
        NULL, and pairs with an empty side, get none.
        """
        self._check_fitted()
        return best_links(self._data, self._cells, self._n_pairs)


def best_links(data: AlignmentData, cells: np.ndarray, n_pairs: int) -> list[set[tuple[int, int]]]:
    """Per pair of a corpus of ``n_pairs``, the links (source_i, target_j) of each target token to its
    highest cell (ties to the lower position); none for a token whose best is NULL."""
    best = _best_candidates(data, cells)
    n_tgt = np.diff(data.tgt_offsets)
    n_src = np.repeat(np.diff(data.src_offsets), n_tgt)
    target_j = np.arange(data.n_target_tokens) - np.repeat(data.tgt_offsets[:-1], n_tgt)
    pair = np.repeat(data.pairs, n_tgt)
    real = best < n_src
    out: list[set[tuple[int, int]]] = [set() for _ in range(n_pairs)]
    for p, i, j in zip(pair[real].tolist(), best[real].tolist(), target_j[real].tolist()):
        out[p].add((i, j))
    return out


def _best_candidates(data: AlignmentData, cells: np.ndarray) -> np.ndarray:
    """Per target token, the argmax over its I + 1 cells (I = NULL; ties to the lower position)."""
    n_cand = np.repeat(np.diff(data.src_offsets) + 1, np.diff(data.tgt_offsets))
    return argmax_segments(cells, n_cand)


def align(corpus: ParallelCorpus, model: str = "hmm", algorithm: str = "cvi1", n_iter=None, prior: float | None = None,
          seed: int = 0, symmetrization: str = "grow-diag-final-and", progress: bool = False,
          **options) -> list[set[tuple[int, int]]]:
    """Align both directions and symmetrise (Och and Ney 2003; Koehn et al. 2003).

    Trains an `Aligner` on ``corpus`` (target words to source words) and one on ``corpus.reversed()``,
    then combines them with `symmetrize`.  With ``symmetrization="forward"`` or ``"reverse"`` only that
    direction is trained.  ``prior`` None takes `default_prior` of the algorithm.  ``options`` go to `Aligner`
    (``null_prob``, ``max_jump``, ``batch_size``, ``kappa``, ``tau0``, ``priors``: a priors file or
    `priors.AlignmentPriors`, whose reverse direction takes ``priors.reversed()``).

    Returns
    -------
    list of set of (source_i, target_j)
    """
    if symmetrization not in SYMMETRIZATIONS:
        raise ValueError(f"unknown symmetrization {symmetrization!r}; choose from {', '.join(SYMMETRIZATIONS)}")
    forward = reverse = None
    priors = options.pop("priors", None)
    if priors is not None and not isinstance(priors, AlignmentPriors):
        priors = read_priors(priors)
    if symmetrization != "reverse":
        forward = Aligner(model, algorithm, n_iter, prior, seed, priors=priors, **options).fit(
            corpus, progress=progress).links()
    if symmetrization != "forward":
        backward = Aligner(model, algorithm, n_iter, prior, seed, **options,
                           priors=None if priors is None else priors.reversed()).fit(
            corpus.reversed(), progress=progress).links()
        reverse = [{(i, j) for j, i in pair} for pair in backward]
    if symmetrization == "forward":
        return forward
    if symmetrization == "reverse":
        return reverse
    return symmetrize(forward, reverse, symmetrization)
