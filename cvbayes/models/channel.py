"""`EditChannel`: a stochastic edit channel p(y | x) learned from (x, y) pairs with the alignment latent.

The noisy channel of Lee, O'Donnell and Glass (2015, §3) between an adaptor grammar's top-level units x
and the acoustic units y, and Ristad and Yianilos's (1998) string-edit model made Bayesian: every
underlying symbol u has a Dirichlet row over deleting it or substituting a surface symbol for it, and
every gap a Dirichlet row, conditioned on the symbol before it, over stopping or inserting a surface
symbol, with at most ``max_insertions`` insertions a gap (the lattice and its forward-backward:
`cvbayes.chains.edits`).

Algorithms (the thesis's shortcut, DESIGN.md: one lattice, three tables):

* ``em``: batch, MAP tables (with alpha, beta <= 1 the MLE: Ristad and Yianilos's EM);
* ``vb``: batch, mean-field VB on exp(E[log theta]) (thesis eq. 3.20-3.22); its ELBO never decreases;
* ``cvi``: leave-one-out over pairs on the posterior means of the other pairs' counts (eq. 3.44-3.50).

Every algorithm starts from the expected counts of one E-step (not counted as a pass) under a start
channel that deletes a symbol, and inserts in a gap, with probability ``start_noise`` each, its
substitutions and insertions uniform over the surface symbols; CVI then updates the pairs in the order
of the data.  Not from the prior's uniform rows: under them a deletion (one draw) is B + 1 times as
probable as a substitution (a draw, then the gap's stop), so the first E-step favours "insert the next
symbol in the gap before, then delete this one" over substituting it, and where each symbol has few
contexts the learners keep that mode (six Brent word types, 900 tokens: emission TV 0.55 from the
uniform start, 0.03-0.05 from this one; on all of Brent's words both starts recover the channel).
No algorithm draws random numbers, so ``random_state`` and ``n_init`` change nothing (kept for the
package's common interface).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..chains.edits import DELETE, INSERT, best_alignments
from ..core import rules
from ..core.rules import MAP, MEAN, VB, check_prior
from ..schedules import Algorithm, batch, leave_one_out
from . import channel_kernels as kernels
from .base import BayesModel

__all__ = ["ALGORITHMS", "DELETE", "EditChannel", "INSERT", "OBJECTIVES"]

ALGORITHMS = {
    "em": Algorithm(batch, MAP, "pair", "Ristad and Yianilos 1998"),
    "vb": Algorithm(batch, VB, "pair", "thesis eq. 3.20-3.22"),
    "cvi": Algorithm(leave_one_out, MEAN, "pair", "thesis eq. 3.44-3.50"),
}

OBJECTIVES = {
    "em": "sum log p(y | x) + log p(theta) under the MAP tables the iteration's E-step ran on",
    "vb": "evidence lower bound: sum log Z under exp(E[log theta]) minus KL(q(theta) || p(theta))",
    "cvi": "sum over pairs of log p(y | x) under the posterior means of the other pairs' counts (a "
           "leave-one-pair-out predictive log-likelihood, eq. 3.47)",
}


class ChannelData(NamedTuple):
    """Pairs laid out for the kernels (`channel_kernels`): flat symbols with offsets, and where each pair's
    (2n + 1)(m + 1) local statistics start."""

    x_ids: np.ndarray
    x_offsets: np.ndarray
    y_ids: np.ndarray
    y_offsets: np.ndarray
    cell_offsets: np.ndarray
    n_underlying: int
    n_surface: int

    @property
    def n_pairs(self):
        return self.x_offsets.shape[0] - 1


class EditChannel(BayesModel):
    """A noisy edit channel from underlying strings x to surface strings y.

    Parameters
    ----------
    algorithm : {"em", "vb", "cvi"}
    n_iter : int
        Passes over the pairs.
    alpha : float
        Symmetric Dirichlet pseudo-count of each emission row theta(. | u) over deletion and the B surface
        symbols.
    beta : float
        Symmetric Dirichlet pseudo-count of each insertion row over stopping and the B surface symbols.
    max_insertions : int
        K: at most this many surface symbols inserted in each gap (before x_0 and after every symbol),
        which keeps the edit lattice finite; a pair with more than n + (n + 1) K surface symbols is refused.
    n_underlying, n_surface : int, optional
        U and B, the sizes of the two alphabets (symbols are ids 0..U-1 and 0..B-1); None takes the largest
        id in the training pairs plus one.
    start_noise : float
        The start channel's deletion and insertion probability (module notes), in (0, 1).
    n_init, random_state : the package's common parameters (module notes: no algorithm here is random).

    ``fit(pairs)`` takes a sequence of (x, y) pairs of integer sequences.

    Attributes
    ----------
    counts_ : (2U + 1, B + 1) expected edit counts: rows 0..U-1 the emissions of each underlying symbol
        (column 0 deletion, 1 + b substitution of b), rows U..2U-1 the gaps after each symbol and row 2U the
        gap before the first (column 0 stop, 1 + b insertion of b).
    emission_, insertion_ : the channel's tables, (U, B + 1) and (U + 1, B + 1), in the layout of
        ``counts_``: the posterior mean of the counts (thesis eq. 3.49), for em the MAP estimate.
    history_ : (iteration, objective, seconds) per pass; `OBJECTIVES` says what the objective is.
    """

    MODEL_NAME = "edit-channel"
    ALGORITHMS = ALGORITHMS
    OBJECTIVES = OBJECTIVES

    def __init__(self, algorithm: str = "cvi", n_iter: int = 20, alpha: float = 0.1, beta: float = 0.1,
                 max_insertions: int = 1, n_underlying: int | None = None, n_surface: int | None = None,
                 start_noise: float = 0.1, n_init: int = 1, random_state: int = 0) -> None:
        self._keep_params(locals())
        self._check_learner("n_iter", "n_init")
        check_prior("alpha", alpha)
        check_prior("beta", beta)
        if isinstance(max_insertions, bool) or not isinstance(max_insertions, (int, np.integer)) or max_insertions < 0:
            raise ValueError(f"max_insertions must be a non-negative integer, got {max_insertions!r}")
        for name in ("n_underlying", "n_surface"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
                raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
        if not 0.0 < start_noise < 1.0:
            raise ValueError(f"start_noise must lie in (0, 1), got {start_noise}")
        self.alpha, self.beta, self.start_noise = float(alpha), float(beta), float(start_noise)
        self.max_insertions = int(max_insertions)

    # -- fit's hooks -------------------------------------------------------------------------------------
    def _prepare(self, pairs, y=None):
        data = self._layout(pairs, self.n_underlying, self.n_surface)
        self._alphabets = (data.n_underlying, data.n_surface)
        return data

    def _layout(self, pairs, n_underlying, n_surface):
        """`ChannelData` of ``pairs`` (a ValueError naming the first bad pair)."""
        xs, ys = [], []
        for p, pair in enumerate(pairs):
            try:
                x, y = pair
            except (TypeError, ValueError):
                raise ValueError(f"pair {p}: expected an (x, y) pair of symbol sequences, got {pair!r}") from None
            xs.append(_symbols(x, p, "x"))
            ys.append(_symbols(y, p, "y"))
        x_lengths = np.array([x.shape[0] for x in xs], dtype=np.int64)
        y_lengths = np.array([y.shape[0] for y in ys], dtype=np.int64)
        bad = np.flatnonzero(y_lengths > x_lengths + (x_lengths + 1) * self.max_insertions)
        if bad.size:
            p = int(bad[0])
            raise ValueError(f"pair {p}: {y_lengths[p]} surface symbols cannot come from {x_lengths[p]} underlying "
                             f"ones with max_insertions={self.max_insertions} (at most n + (n + 1) K)")
        x_ids = np.concatenate([np.zeros(0, dtype=np.int64), *xs])
        y_ids = np.concatenate([np.zeros(0, dtype=np.int64), *ys])
        n_underlying = _alphabet(n_underlying, x_ids, "x", "n_underlying")
        n_surface = _alphabet(n_surface, y_ids, "y", "n_surface")
        offsets = [np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64) for lengths in (x_lengths, y_lengths)]
        cells = np.concatenate([[0], np.cumsum((2 * x_lengths + 1) * (y_lengths + 1))]).astype(np.int64)
        return ChannelData(x_ids, offsets[0], y_ids, offsets[1], cells, n_underlying, n_surface)

    def _fingerprint(self, data):
        return data.x_ids, data.x_offsets, data.y_ids, data.y_offsets

    def _batch(self, data, run):
        structure = BatchChannel(data, self.max_insertions, self.alpha, self.beta)
        return structure, structure.expectations(start_table(data, self.start_noise))[0], None

    def _collapsed(self, data, run):
        structure = CollapsedChannel(data, self.max_insertions, self.alpha, self.beta, self.start_noise)
        run.checkpoint.track_arrays("collapsed", {"counts": structure.counts, "totals": structure.totals,
                                                  "local": structure.local})
        return structure

    def _set_fitted(self, statistics, rule, data=None):
        self.counts_ = np.asarray(statistics, dtype=float).copy()

    def _tables(self):
        """The final (2U + 1, B + 1) table: MAP for em, the posterior mean otherwise."""
        return channel_tables(self.counts_, MAP if self.algorithm_ == "em" else MEAN, self.alpha, self.beta)

    @property
    def emission_(self):
        self._check_fitted()
        return self._tables()[:self._alphabets[0]]

    @property
    def insertion_(self):
        self._check_fitted()
        return self._tables()[self._alphabets[0]:]

    # -- files ---------------------------------------------------------------------------------------------
    def _saved(self):
        return {"params": self.get_params(), "alphabets": list(self._alphabets)}, {"counts": self.counts_}

    @classmethod
    def _from_saved(cls, meta, arrays, path):
        model = cls(**meta["params"])
        model._alphabets = tuple(meta["alphabets"])
        model.counts_ = arrays["counts"]
        return model

    # -- results -------------------------------------------------------------------------------------------
    def score(self, pairs) -> float:
        """sum over ``pairs`` of log p(y | x) under the fitted channel (`emission_`, `insertion_`); -inf if
        some pair has no edit sequence of positive probability."""
        return float(self.pair_log_likelihoods(pairs).sum())

    def pair_log_likelihoods(self, pairs) -> np.ndarray:
        """log p(y | x) of every pair under the fitted channel (the lattice's forward pass)."""
        self._check_fitted()
        data = self._layout(pairs, *self._alphabets)
        out = np.empty(data.n_pairs)
        kernels.log_likelihoods(data.x_ids, data.x_offsets, data.y_ids, data.y_offsets, data.n_underlying,
                                self._tables(), self.max_insertions, out)
        return out

    def align(self, pairs) -> list[np.ndarray]:
        """The most probable edit sequence of every pair under the fitted channel (`edits.edit_viterbi`):
        per pair an (edits, 2) int array of rows (i, j) in the generative order, (i, DELETE) for a deletion
        of x_i and (INSERT, j) for an insertion of y_j."""
        self._check_fitted()
        data = self._layout(pairs, *self._alphabets)
        return best_alignments(data.x_ids, data.x_offsets, data.y_ids, data.y_offsets, data.n_underlying,
                               self._tables(), self.max_insertions)


def start_table(data, noise):
    """The start channel (module notes): each emission row deletes with probability ``noise`` and each
    insertion row inserts with it, the rest spread evenly over the surface symbols."""
    table = np.empty((2 * data.n_underlying + 1, data.n_surface + 1))
    table[:data.n_underlying] = (1.0 - noise) / data.n_surface
    table[:data.n_underlying, 0] = noise
    table[data.n_underlying:] = noise / data.n_surface
    table[data.n_underlying:, 0] = 1.0 - noise
    return table


def channel_tables(counts, rule, alpha, beta):
    """The (2U + 1, B + 1) table of ``rule`` (core.rules) from the edit counts: the emission rows under the
    pseudo-count ``alpha``, the insertion rows under ``beta`` (the row layout of `EditChannel.counts_`)."""
    n_underlying = (counts.shape[0] - 1) // 2
    return np.vstack([rules.dirichlet_table(rule, counts[:n_underlying], alpha),
                      rules.dirichlet_table(rule, counts[n_underlying:], beta)])


class BatchChannel:
    """The channel's structure for `schedules.batch` (EM and VB)."""

    def __init__(self, data, max_insertions, alpha, beta):
        self.data = data
        self.max_insertions = max_insertions
        self.alpha, self.beta = alpha, beta

    def tables(self, statistics, rule):
        return channel_tables(statistics, rule, self.alpha, self.beta)

    def expectations(self, table):
        data = self.data
        counts = np.zeros_like(table)
        log_evidence, bad = kernels.expected_counts(data.x_ids, data.x_offsets, data.y_ids, data.y_offsets,
                                                    data.cell_offsets, data.n_underlying, table, self.max_insertions,
                                                    counts, np.zeros(0, dtype=np.float32))
        _refuse(bad)
        return counts, log_evidence

    def penalty(self, rule, statistics, tables):
        """MAP: the log prior of the tables; VB: minus KL(q(theta) || p(theta)) of the counts (eq. 3.11)."""
        split = self.data.n_underlying
        if rule == MAP:
            return (rules.dirichlet_log_prior(tables[:split], self.alpha)
                    + rules.dirichlet_log_prior(tables[split:], self.beta))
        return -(rules.dirichlet_kl(statistics[:split], self.alpha) + rules.dirichlet_kl(statistics[split:], self.beta))


class CollapsedChannel:
    """The channel's structure for `schedules.leave_one_out` (CVI, the unit a pair): the pairs' local
    expected edit counts (float32) and the global counts, their sum, with row totals."""

    def __init__(self, data, max_insertions, alpha, beta, start_noise):
        self.data = data
        self.max_insertions = max_insertions
        split = data.n_underlying
        pseudo = np.concatenate([np.full(split, alpha), np.full(split + 1, beta)])
        self.counts = np.zeros((2 * split + 1, data.n_surface + 1))
        self.local = np.zeros(data.cell_offsets[-1], dtype=np.float32)
        _, bad = kernels.expected_counts(data.x_ids, data.x_offsets, data.y_ids, data.y_offsets, data.cell_offsets,
                                         split, start_table(data, start_noise), max_insertions, self.counts,
                                         self.local)
        _refuse(bad)
        self.totals = self.counts.sum(axis=1)
        self.state = kernels.collapsed_state(data, max_insertions, pseudo, self.counts, self.totals, self.local)
        self.order = np.arange(data.n_pairs, dtype=np.int64)

    def sweep(self, iteration):
        objective, bad = kernels.cvi_pass(self.state, self.order)
        _refuse(bad)
        return objective

    def current(self):
        return self.counts.copy()


def _refuse(bad):
    if bad >= 0:
        raise ValueError(f"pair {bad}: no edit sequence of positive probability rewrites x into y")


def _symbols(values, p, side):
    """One side of pair ``p`` as an int64 array of non-negative ids (a ValueError naming the pair)."""
    array = np.asarray(values)
    if array.ndim != 1 or (array.size and not np.issubdtype(array.dtype, np.integer)):
        raise ValueError(f"pair {p}: {side} must be a sequence of integer symbol ids, got {values!r}")
    array = array.astype(np.int64)
    if array.size and array.min() < 0:
        raise ValueError(f"pair {p}: {side} has a negative symbol id {int(array.min())}")
    return array


def _alphabet(size, ids, side, name):
    """The alphabet size ``size`` checked against the ids, or (None) the largest id plus one."""
    largest = int(ids.max()) + 1 if ids.size else 1
    if size is None:
        return largest
    if largest > size:
        raise ValueError(f"{side} has symbol id {largest - 1}, beyond {name}={size}")
    return int(size)
