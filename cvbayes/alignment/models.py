"""Word alignment with IBM Model 1 and the HMM aligner, trained five ways (thesis §3.8.3).

Models (both align each target word to one source position or to NULL):

* IBM Model 1 (Brown et al. 1993): a_j uniform over {NULL, 0 .. I-1}, then
  e_j ~ t(. | f_{a_j});
* the HMM aligner (Vogel et al. 1996) with NULL as Och and Ney (2003): a_j
  depends on the previous real position through a bucketed jump width, NULL
  words take a fixed probability p0 (``null_prob``) and remember the last
  real position (alignment/chain.py, alignment/jumps.py).

Dirichlet priors (``prior``, 0.1 as the thesis) sit on every translation row
t(. | f) (over the V_e target words) and on the jump buckets.

Algorithms (the thesis's shortcut from EM to CVI, DESIGN.md: one dynamic
program per model; only the tables it runs on and the refresh schedule change):

* ``em``: Baum-Welch with MAP tables (rules.dirichlet_mode; with prior <= 1
  the MLE), the GIZA++ pipeline: IBM1 iterations, then HMM iterations
  starting from IBM1's expected counts;
* ``vb``: mean-field VB (Riley and Gildea 2012; thesis eq. 3.20-3.22): the
  E-step runs on exp(E[log t]) and exp(E[log theta]);
* ``cvi1``: token-level collapsed VB (eq. 3.28-3.39); exactly CVB0 for IBM1,
  for the HMM see `collapsed.hmm_cvi1_sweep` for the approximation;
* ``cvi2``: sentence-level collapsed VB (eq. 3.44-3.50);
* ``cgs``: collapsed Gibbs sampling (eq. 3.25), no annealing; the links come
  from the conditional distributions averaged over the last half of the
  final model's sweeps.

Every algorithm runs IBM1 first and hands its statistics to the HMM.  IBM1
starts from uniform alignment posteriors (the first EM iteration is the
E-step of a uniform table); CGS starts from a uniform random alignment
(``seed``), and the deterministic algorithms do not use the seed.

Decoding: for every target word, the candidate (source position or NULL)
with the largest posterior marginal; a word whose best candidate is NULL
gets no link.
"""
from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np
from scipy.special import digamma, gammaln
from tqdm.auto import tqdm

from ..inference import rules
from ..inference.sweeps import seed_numba
from . import batch, collapsed, gibbs
from .corpus import ParallelCorpus
from .index import AlignmentData, build_index
from .symmetrize import SYMMETRIZATIONS, symmetrize

__all__ = ["ALGORITHMS", "DEFAULT_ITERATIONS", "MODELS", "OBJECTIVES", "Aligner", "IterationRecord", "align"]

MODELS = ("ibm1", "hmm")
ALGORITHMS = ("em", "vb", "cvi1", "cvi2", "cgs")

# (IBM1, HMM) iterations.  EM and VB: GIZA++'s 5 + 5 (Och and Ney 2003), as the
# thesis runs them; CVI-1: 3 + 3, the thesis's choice on validation data
# (§3.8.3); CVI-2 converges at least as fast, so it gets the same; CGS: the
# 50 sweeps per model of Gal and Blunsom (2013) that the thesis uses.
DEFAULT_ITERATIONS = {"em": (5, 5), "vb": (5, 5), "cvi1": (3, 3), "cvi2": (3, 3), "cgs": (50, 50)}

OBJECTIVES = {
    "em": "log p(e | f, t, theta) + log p(t, theta) (the log-likelihood when prior <= 1) of the tables "
          "the iteration's E-step ran on",
    "vb": "evidence lower bound: sum log Z under exp(E[log .]) minus KL(q(t, theta) || p(t, theta))",
    "cvi1": "sum over target words of the update's log normaliser (a leave-one-word-out predictive "
            "log-likelihood)",
    "cvi2": "sum over sentence pairs of log p(e | f) under the surrogate parameters (a leave-one-pair-out "
            "predictive log-likelihood, eq. 3.47)",
    "cgs": "collapsed log joint log p(e, a | f) of the sample (for the HMM with its jump buckets, eq. 3.24)",
}

NULL_PROB = 0.2   # Och and Ney (2003) tune p0 near 0.2; fixed, not learned
MAX_JUMP = 7      # jump widths beyond +-7 share a bucket


class IterationRecord(NamedTuple):
    """One entry of ``Aligner.history_``."""

    model: str
    iteration: int
    objective: float
    seconds: float


def _iterations(algorithm: str, model: str, n_iter) -> tuple[tuple[str, int], ...]:
    if n_iter is None:
        n_ibm1, n_hmm = DEFAULT_ITERATIONS[algorithm]
    elif isinstance(n_iter, (int, np.integer)):
        n_ibm1 = n_hmm = int(n_iter)
    else:
        pair = [int(n) for n in n_iter]
        if len(pair) != 2:
            raise ValueError(f"n_iter takes None, an int or (ibm1_iters, hmm_iters), got {n_iter!r}")
        n_ibm1, n_hmm = pair
    if n_ibm1 < 0 or n_hmm < 0 or (model == "ibm1" and n_ibm1 == 0) or (model == "hmm" and n_hmm == 0):
        raise ValueError(f"need a positive number of iterations for the final model, got {n_iter!r}")
    return (("ibm1", n_ibm1),) if model == "ibm1" else (("ibm1", n_ibm1), ("hmm", n_hmm))


class Aligner:
    """Align target words to source words (fast_align's forward direction).

    Parameters
    ----------
    model : {"hmm", "ibm1"}
    algorithm : {"em", "vb", "cvi1", "cvi2", "cgs"}
    n_iter : None, int or (int, int)
        Iterations of IBM1 and of the HMM; an int sets both; None uses
        `DEFAULT_ITERATIONS` (em, vb 5 + 5; cvi1, cvi2 3 + 3; cgs 50 + 50).
    prior : float
        Symmetric Dirichlet concentration on every translation row and on
        the jump buckets (thesis §3.8.3: 0.1).
    seed : int
        Seeds the Gibbs sampler (the other algorithms are deterministic).
    null_prob : float
        p0, the HMM's fixed probability of a jump to NULL.
    max_jump : int
        M: jump widths are clipped to [-M, M] (2M + 1 buckets).

    Attributes
    ----------
    history_ : list of IterationRecord
        (model, iteration, objective, seconds) per iteration; `OBJECTIVES`
        says what the objective is for each algorithm.
    seconds_ : float
        Wall time of `fit`, indexing included.
    """

    def __init__(self, model: str = "hmm", algorithm: str = "cvi1", n_iter=None, prior: float = 0.1,
                 seed: int = 0, *, null_prob: float = NULL_PROB, max_jump: int = MAX_JUMP) -> None:
        if model not in MODELS:
            raise ValueError(f"unknown model {model!r}; choose from {', '.join(MODELS)}")
        if algorithm not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {algorithm!r}; choose from {', '.join(ALGORITHMS)}")
        if not prior > 0:
            raise ValueError(f"prior must be positive, got {prior}")
        if not 0.0 < null_prob < 1.0:
            raise ValueError(f"null_prob must lie in (0, 1), got {null_prob}")
        if max_jump < 1:
            raise ValueError(f"max_jump must be at least 1, got {max_jump}")
        self.model = model
        self.algorithm = algorithm
        self.stages = _iterations(algorithm, model, n_iter)
        self.prior = float(prior)
        self.seed = int(seed)
        self.null_prob = float(null_prob)
        self.max_jump = int(max_jump)
        self.history_: list[IterationRecord] = []
        self.seconds_ = 0.0

    @property
    def n_buckets(self) -> int:
        """2M + 1 jump buckets (alignment/jumps.py)."""
        return 2 * self.max_jump + 1

    def fit(self, corpus: ParallelCorpus, progress: bool = False) -> Aligner:
        """Train on a corpus; afterwards `links` gives its alignment."""
        started = time.perf_counter()
        self.history_ = []
        self._n_pairs = len(corpus)
        data = build_index(corpus)
        self._data = data
        bar = tqdm(total=sum(n for _, n in self.stages), desc=f"{self.model} {self.algorithm}",
                   disable=not progress, leave=False)
        if data.n_pairs == 0:
            self._cells = np.zeros(0, dtype=np.float32)
        elif self.algorithm in ("em", "vb"):
            self._cells = self._fit_batch(data, bar)
        elif self.algorithm in ("cvi1", "cvi2"):
            self._cells = self._fit_collapsed(data, bar)
        else:
            self._cells = self._fit_gibbs(data, bar)
        bar.close()
        self.seconds_ = time.perf_counter() - started
        return self

    # -- bookkeeping ------------------------------------------------------

    def _record(self, model, iteration, objective, started, bar):
        self.history_.append(IterationRecord(model, iteration, float(objective), time.perf_counter() - started))
        bar.set_postfix(model=model, objective=f"{objective:.6g}")
        bar.update()

    def _check(self, data, bad):
        if bad >= 0:
            raise ValueError(f"sentence pair {int(data.pairs[bad])} has no alignment of positive probability "
                             f"under the {self.algorithm} tables; use a larger prior")

    # -- EM and VB --------------------------------------------------------

    def _translation_table(self, data, counts, totals):
        """Per-slot t(e | f): the MAP table for EM (eq. 3.18-3.19), exp E[log t] for VB (eq. 3.22)."""
        v = data.n_target_types
        row_totals = totals[data.slot_row]
        if self.algorithm == "em":
            pseudo = max(self.prior - 1.0, 0.0)
            den = row_totals + v * pseudo
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(den > 0, (counts + pseudo) / np.where(den > 0, den, 1.0), 1.0 / v)
        table = np.exp(digamma(counts + self.prior) - digamma(row_totals + v * self.prior))
        return np.maximum(table, np.finfo(float).tiny)

    def _translation_log_prior(self, data, counts, totals):
        """sum_f (beta - 1)_+ sum_e log t(e | f) over all V_e words of every row (EM's MAP objective)."""
        pseudo = max(self.prior - 1.0, 0.0)
        if pseudo == 0.0:
            return 0.0
        v = data.n_target_types
        den = totals + v * pseudo
        seen = np.bincount(data.slot_row, minlength=data.n_rows)
        unseen = (v - seen) * np.log(pseudo / den)
        return float(pseudo * (np.log((counts + pseudo) / den[data.slot_row]).sum() + unseen.sum()))

    def _translation_kl(self, data, counts, totals):
        """sum_f KL(Dir(C_f + beta) || Dir(beta)) over the sparse rows (VB's ELBO, eq. 3.11)."""
        v_prior = data.n_target_types * self.prior
        used = totals > 0
        row_part = gammaln(totals[used] + v_prior) - gammaln(v_prior)
        post_total = totals[data.slot_row] + v_prior
        slot_part = (gammaln(counts + self.prior) - gammaln(self.prior)
                     - counts * (digamma(counts + self.prior) - digamma(post_total)))
        return float(row_part.sum() - slot_part.sum())

    def _jump_table(self, jump_counts):
        """theta over the jump buckets: MAP for EM (eq. 3.18), exp E[log theta] for VB (eq. 3.21)."""
        if self.algorithm == "em":
            return rules.dirichlet_mode(jump_counts, self.prior)
        return rules.dirichlet_geometric_mean(jump_counts, self.prior)

    def _fit_batch(self, data, bar):
        """EM or VB: E-steps in parallel on fixed tables, then the tables from the counts."""
        counts = np.zeros(data.n_slots)
        totals = np.zeros(data.n_rows)
        cells = np.empty(data.cell_slot.shape[0], dtype=np.float32)
        for model, n_iter in self.stages:
            jump_counts = np.zeros(self.n_buckets)
            for iteration in range(1, n_iter + 1):
                started = time.perf_counter()
                table = self._translation_table(data, counts, totals)
                if model == "ibm1":
                    log_z, bad = batch.ibm1_expectations(table, data.src_offsets, data.tgt_offsets, data.cell_offsets,
                                                         data.cell_slot, data.chunk_bounds, cells)
                    new_jumps = jump_counts
                else:
                    theta = self._jump_table(jump_counts)
                    new_jumps, log_z, bad = batch.hmm_expectations(
                        table, theta, self.null_prob, self.max_jump, data.src_offsets, data.tgt_offsets,
                        data.cell_offsets, data.cell_slot, data.chunk_bounds, cells)
                self._check(data, bad)
                if self.algorithm == "em":
                    objective = log_z + self._translation_log_prior(data, counts, totals)
                    if model == "hmm":
                        objective += rules.dirichlet_log_prior_terms(theta, self.prior)
                else:
                    objective = log_z - self._translation_kl(data, counts, totals)
                    if model == "hmm":
                        objective -= rules.dirichlet_kl(jump_counts[None], self.prior)
                counts = data.slot_totals(cells)
                totals = data.row_totals(counts)
                jump_counts = new_jumps
                self._record(model, iteration, objective, started, bar)
        return cells

    # -- CVI-1 and CVI-2 --------------------------------------------------

    def _fit_collapsed(self, data, bar):
        """CVI-1 or CVI-2 from uniform IBM1 posteriors; local statistics in float32."""
        v_prior = data.n_target_types * self.prior
        n_src = np.diff(data.src_offsets)
        n_tgt = np.diff(data.tgt_offsets)
        cells = np.repeat((1.0 / (n_src + 1)).astype(np.float32), (n_src + 1) * n_tgt)
        counts = data.slot_totals(cells)
        totals = data.row_totals(counts)
        for model, n_iter in self.stages:
            if model == "ibm1":
                sweep = collapsed.ibm1_cvi1_sweep if self.algorithm == "cvi1" else collapsed.ibm1_cvi2_sweep
                for iteration in range(1, n_iter + 1):
                    started = time.perf_counter()
                    objective = sweep(self.prior, v_prior, data.src_offsets, data.tgt_offsets, data.cell_offsets,
                                      data.cell_slot, data.slot_row, counts, totals, cells)
                    self._record(model, iteration, objective, started, bar)
            elif self.algorithm == "cvi2":
                jump_counts = np.zeros(self.n_buckets)
                jump_local = np.zeros((data.n_pairs, self.n_buckets), dtype=np.float32)
                for iteration in range(1, n_iter + 1):
                    started = time.perf_counter()
                    objective, bad = collapsed.hmm_cvi2_sweep(
                        self.prior, v_prior, self.prior, self.null_prob, self.max_jump, data.src_offsets,
                        data.tgt_offsets, data.cell_offsets, data.cell_slot, data.slot_row, counts, totals,
                        jump_counts, cells, jump_local)
                    self._check(data, bad)
                    self._record(model, iteration, objective, started, bar)
            else:
                state_offsets = np.zeros(data.n_pairs + 1, dtype=np.int64)
                np.cumsum(2 * n_src * n_tgt, out=state_offsets[1:])
                states = np.empty(state_offsets[-1], dtype=np.float32)
                into = np.empty((data.n_target_tokens, self.n_buckets), dtype=np.float32)
                counts = np.zeros(data.n_slots)
                totals = np.zeros(data.n_rows)
                jump_counts = collapsed.hmm_cvi1_init(
                    self.max_jump, data.src_offsets, data.tgt_offsets, data.cell_offsets, state_offsets,
                    data.cell_slot, data.slot_row, cells, states, into, counts, totals)
                for iteration in range(1, n_iter + 1):
                    started = time.perf_counter()
                    objective, bad = collapsed.hmm_cvi1_sweep(
                        self.prior, v_prior, self.prior, self.null_prob, self.max_jump, data.src_offsets,
                        data.tgt_offsets, data.cell_offsets, state_offsets, data.cell_slot, data.slot_row,
                        counts, totals, jump_counts, states, into)
                    self._check(data, bad)
                    self._record(model, iteration, objective, started, bar)
                collapsed.collapse_state_posteriors(data.src_offsets, data.tgt_offsets, data.cell_offsets,
                                                    state_offsets, states, cells)
        return cells

    # -- collapsed Gibbs sampling -----------------------------------------

    def _translation_log_marginal(self, data, counts, totals):
        """log of the Dirichlet-multinomial marginal of the translation counts (eq. 3.24)."""
        v_prior = data.n_target_types * self.prior
        used = totals > 0
        return float((gammaln(v_prior) - gammaln(totals[used] + v_prior)).sum()
                     + (gammaln(counts + self.prior) - gammaln(self.prior)).sum())

    def _fit_gibbs(self, data, bar):
        """CGS: IBM1 sweeps from a uniform random alignment, then HMM sweeps from IBM1's last sample."""
        v_prior = data.n_target_types * self.prior
        n_src = np.diff(data.src_offsets)
        n_tgt = np.diff(data.tgt_offsets)
        rng = np.random.default_rng(self.seed)
        seed_numba(int(rng.integers(2**31)))
        align = rng.integers(0, np.repeat(n_src, n_tgt) + 1).astype(np.int32)
        cells = np.empty(data.cell_slot.shape[0], dtype=np.float32)
        gibbs.sample_cells(data.cell_offsets, data.src_offsets, data.tgt_offsets, align, cells)
        counts = data.slot_totals(cells)
        totals = data.row_totals(counts)
        rb = np.zeros_like(cells)
        n_kept = 0
        for stage, (model, n_iter) in enumerate(self.stages):
            final = stage == len(self.stages) - 1
            if model == "hmm":
                bucket = np.empty(data.n_target_tokens, dtype=np.int32)
                jump_counts = np.zeros(self.n_buckets)
                gibbs.hmm_cgs_init(self.max_jump, data.src_offsets, data.tgt_offsets, align, bucket, jump_counts)
            for iteration in range(1, n_iter + 1):
                started = time.perf_counter()
                keep = final and iteration > n_iter // 2
                if model == "ibm1":
                    gibbs.ibm1_cgs_sweep(self.prior, v_prior, data.src_offsets, data.tgt_offsets, data.cell_offsets,
                                         data.cell_slot, data.slot_row, align, counts, totals, rb, keep)
                    objective = (self._translation_log_marginal(data, counts, totals)
                                 - float((n_tgt * np.log(n_src + 1.0)).sum()))
                else:
                    gibbs.hmm_cgs_sweep(self.prior, v_prior, self.prior, self.null_prob, self.max_jump,
                                        data.src_offsets, data.tgt_offsets, data.cell_offsets, data.cell_slot,
                                        data.slot_row, align, bucket, counts, totals, jump_counts, rb, keep)
                    objective = (self._translation_log_marginal(data, counts, totals)
                                 + rules.dirichlet_log_marginal(jump_counts[None], self.prior)
                                 + gibbs.hmm_alignment_log_prob(self.null_prob, self.max_jump, data.src_offsets,
                                                                data.tgt_offsets, align, bucket))
                n_kept += keep
                self._record(model, iteration, objective, started, bar)
        return rb / np.float32(n_kept)

    # -- results ----------------------------------------------------------

    def links(self) -> list[set[tuple[int, int]]]:
        """The fitted corpus's alignment: per pair, the set of (source_i, target_j) links.

        Each target word links to its highest-posterior source position;
        words whose best candidate is NULL, and pairs with an empty side,
        get none.
        """
        if not hasattr(self, "_data"):
            raise RuntimeError("call fit() first")
        data = self._data
        best = _best_candidates(data, self._cells)
        n_tgt = np.diff(data.tgt_offsets)
        n_src = np.repeat(np.diff(data.src_offsets), n_tgt)
        target_j = np.arange(data.n_target_tokens) - np.repeat(data.tgt_offsets[:-1], n_tgt)
        pair = np.repeat(data.pairs, n_tgt)
        real = best < n_src
        out: list[set[tuple[int, int]]] = [set() for _ in range(self._n_pairs)]
        for p, i, j in zip(pair[real].tolist(), best[real].tolist(), target_j[real].tolist()):
            out[p].add((i, j))
        return out


def _best_candidates(data: AlignmentData, cells: np.ndarray) -> np.ndarray:
    """Per target token, the argmax over its I + 1 cells (I = NULL; ties to the lower position)."""
    n_cand = np.repeat(np.diff(data.src_offsets) + 1, np.diff(data.tgt_offsets))
    return batch.argmax_segments(cells, n_cand)


def align(corpus: ParallelCorpus, model: str = "hmm", algorithm: str = "cvi1", n_iter=None, prior: float = 0.1,
          seed: int = 0, symmetrization: str = "grow-diag-final-and", progress: bool = False,
          **options) -> list[set[tuple[int, int]]]:
    """Align both directions and symmetrise (Och and Ney 2003; Koehn et al. 2003).

    Trains an `Aligner` on ``corpus`` (target words to source words) and one
    on ``corpus.reversed()``, then combines them with `symmetrize`.  With
    ``symmetrization="forward"`` or ``"reverse"`` only that direction is
    trained.  ``options`` go to `Aligner` (``null_prob``, ``max_jump``).

    Returns
    -------
    list of set of (source_i, target_j)
    """
    if symmetrization not in SYMMETRIZATIONS:
        raise ValueError(f"unknown symmetrization {symmetrization!r}; choose from {', '.join(SYMMETRIZATIONS)}")
    forward = reverse = None
    if symmetrization != "reverse":
        forward = Aligner(model, algorithm, n_iter, prior, seed, **options).fit(corpus, progress).links()
    if symmetrization != "forward":
        backward = Aligner(model, algorithm, n_iter, prior, seed, **options).fit(corpus.reversed(), progress).links()
        reverse = [{(i, j) for j, i in pair} for pair in backward]
    if symmetrization == "forward":
        return forward
    if symmetrization == "reverse":
        return reverse
    return symmetrize(forward, reverse, symmetrization)
