"""PCFGs with latent annotations (Matsuzaki et al. 2005; thesis §4.5.3) and three learners.

Every symbol X of a treebank grammar is split into H subtypes X[0..H-1]; the tree shapes and symbols are
observed, the subtypes hidden.  ``PCFGLA.fit(trees, algorithm=...)`` runs EM, VB or CVI: all three run
inside-outside over the annotations of the observed trees (`cvbayes.trees.latent`) and differ only in
the parameter rule (`cvbayes.core.rules`) and the schedule (`cvbayes.schedules`), which `ALGORITHMS`
names.  A Dirichlet row is one annotated parent A[a]: its binary, unary and lexical rules together, the
|R_A| = n_binary(A) H^2 + n_unary(A) H + n_lexical(A) outcomes of eq. 4.12 and 4.24 (`RowLayout`).

Starts follow the thesis (after Petrov et al. 2006): EM from the treebank grammar split with 1 % noise;
VB and CVI from the expected counts under that split grammar (CVI keeps every tree's own counts, in
float32, to leave them out, eq. 4.24).  ``parse`` runs the coarse-to-fine CKY parser of
`cvbayes.trees.latent_parse` on the fitted grammar: the MAP table for EM, the posterior mean otherwise.
"""
from __future__ import annotations

import os

import numpy as np
from numba import njit

from ..core.rules import MAP, MEAN, VB, mean_cell, slot_kl, slot_log_prior
from ..core.units import ZeroProbabilityError, max_length
from ..data.trees import read_trees
from ..schedules import IterationRecord, Progress, batch, leave_one_out, passes
from ..trees.grammar import LEXICAL, UNARY
from ..trees.latent import (AnnotatedTables, RowLayout, add_posteriors, add_row_totals, latent_inside_outside,
                            parent_totals, posterior_offsets, row_sizes, split_grammar, tree_inside_outside)
from ..trees.latent_parse import LatentParser
from .files import read_model, write_model
from ..trees.treebank import PreparedTreebank, TreebankGrammar, prepare_treebank

__all__ = ["ALGORITHMS", "OBJECTIVES", "PCFGLA"]

ALGORITHMS = {
    "em": (batch, MAP),            # inside-outside over annotations, eq. 4.5-4.10 (the MLE when alpha <= 1)
    "vb": (batch, VB),             # eq. 4.12 over annotated rules
    "cvi": (leave_one_out, MEAN),  # eq. 4.24 over annotated rules, a tree's expected counts left out
}

OBJECTIVES = {
    "em": "log p(trees | theta) + log p(theta) up to a constant (the log-likelihood when alpha <= 1)",
    "vb": "evidence lower bound L^VI (eq. 4.3) over the annotations",
    "cvi": "sum over trees of log Z under the surrogate weights (eq. 4.24): a leave-one-tree-out predictive "
           "log-likelihood of the annotations",
}

SAVE_FORMAT = "cvbayes-pcfg-la-1"


class LatentTrees:
    """The batch structure of EM and VB (`cvbayes.schedules.batch`): observed trees, hidden subtypes.

    Statistics are `AnnotatedTables` of expected counts; tables come from them by a rule of
    `cvbayes.core.rules` over the rows of `RowLayout`.
    """

    def __init__(self, prepared: PreparedTreebank, layout: RowLayout, alpha: float):
        self.nodes = prepared.nodes
        self.layout = layout
        self.alpha = alpha

    def tables(self, statistics, rule):
        """MAP (eq. 4.10) or VB (eq. 4.12) tables of the counts."""
        return self.layout.table(rule, statistics, self.alpha)

    def expectations(self, tables):
        """Expected annotated-rule counts and sum log Z over the trees (eq. 4.7-4.9)."""
        result = latent_inside_outside(self.nodes, tables)
        return result.counts, float(result.log_z.sum())

    def penalty(self, rule, statistics, tables):
        """MAP: the log prior of the tables; VB: minus KL(q(theta) || p(theta)) of the counts."""
        layout = self.layout
        if rule == MAP:
            totals = np.zeros(layout.n_rows) if statistics is None else layout.row_totals(statistics)
            return slot_log_prior(layout.flatten(tables), layout.cell_row, totals, self.alpha, layout.row_width)
        return -slot_kl(layout.flatten(statistics), layout.cell_row, layout.row_totals(statistics), self.alpha,
                        layout.row_width)


# ------------------------------------------------------------------ CVI (eq. 4.24)
@njit(cache=True)
def _mean_weights(first, last, node_kind, node_rule, binary_parent, unary_parent, lexical_parent,
                  binary_counts, unary_counts, lexical_counts, totals, row_size, alpha,
                  binary_weights, unary_weights, lexical_weights):
    """The surrogate weights theta_bar (eq. 4.24) of the rules that tree nodes first..last-1 use, from
    the counts and row totals of the other trees (`cvbayes.core.rules.mean_cell`)."""
    n_sub = totals.shape[1]
    for n in range(first, last):
        r = node_rule[n]
        kind = node_kind[n]
        if kind == LEXICAL:
            parent = lexical_parent[r]
            for a in range(n_sub):
                lexical_weights[r, a] = mean_cell(lexical_counts[r, a], alpha, totals[parent, a],
                                                  alpha * row_size[parent])
        elif kind == UNARY:
            parent = unary_parent[r]
            for a in range(n_sub):
                for b in range(n_sub):
                    unary_weights[r, a, b] = mean_cell(unary_counts[r, a, b], alpha, totals[parent, a],
                                                       alpha * row_size[parent])
        else:
            parent = binary_parent[r]
            for a in range(n_sub):
                prior_total = alpha * row_size[parent]
                for b in range(n_sub):
                    for c in range(n_sub):
                        binary_weights[r, a, b, c] = mean_cell(binary_counts[r, a, b, c], alpha, totals[parent, a],
                                                               prior_total)


@njit(cache=True)
def _update_tree(state, tree):
    """CVI's update of one tree (eq. 4.24): take its counts out, run inside-outside over its
    annotations on the MEAN weights of the rest, put the new counts back; returns log Z."""
    (tree_offsets, node_kind, node_rule, node_left, node_right, binary_parent, unary_parent, lexical_parent,
     binary_counts, unary_counts, lexical_counts, totals, row_size, alpha, binary_weights, unary_weights,
     lexical_weights, inside, outside, scale, store, store_offsets) = state
    first = tree_offsets[tree]
    last = tree_offsets[tree + 1]
    add_posteriors(tree_offsets, node_kind, node_rule, tree, store, store_offsets, -1.0,
                   binary_counts, unary_counts, lexical_counts)
    add_row_totals(tree_offsets, node_kind, node_rule, tree, store, store_offsets, -1.0,
                   binary_parent, unary_parent, lexical_parent, totals)
    _mean_weights(first, last, node_kind, node_rule, binary_parent, unary_parent, lexical_parent,
                  binary_counts, unary_counts, lexical_counts, totals, row_size, alpha,
                  binary_weights, unary_weights, lexical_weights)
    log_z = tree_inside_outside(node_kind, node_rule, node_left, node_right, first, last,
                                binary_weights, unary_weights, lexical_weights, inside, outside, scale,
                                binary_counts, unary_counts, lexical_counts, store, store_offsets)
    if log_z > -np.inf:
        add_row_totals(tree_offsets, node_kind, node_rule, tree, store, store_offsets, 1.0,
                       binary_parent, unary_parent, lexical_parent, totals)
    return log_z


@njit(cache=True)
def cvi_pass(state, order):
    """One CVI pass over the trees in ``order`` (`cvbayes.schedules.leave_one_out`)."""
    return leave_one_out(_update_tree, state, order)


# ------------------------------------------------------------------ the model
class PCFGLA:
    """A PCFG with latent annotations: every treebank symbol split into ``n_subtypes`` subtypes.

    Parameters
    ----------
    n_subtypes : int
        H, the subtypes of every symbol (ROOT's subtype is fixed at 0).
    alpha : float
        Symmetric Dirichlet pseudo-count of every annotated rule (the prior of every row A[a]).
    horizontal, vertical : int
        Markovisation orders of the binarisation (`cvbayes.trees.treebank.binarise`); the defaults,
        0 and 1, are Petrov et al. (2006)'s X-bar start grammar.
    min_count : int
        Training words seen fewer times become word signatures (`word_signature`).

    Attributes
    ----------
    grammar_ : TreebankGrammar
        The binarised treebank grammar (symbols, words, rules and their treebank counts).
    counts_ : AnnotatedTables
        Expected annotated-rule counts: the last E-step's for EM and VB, the exact sum of every tree's
        current counts for CVI.
    tables_ : AnnotatedTables
        The fitted rule weights: the MAP table (EM) or the posterior mean (VB, CVI) of ``counts_``.
    history_ : list of IterationRecord
        The objective (``objective_name_``) and wall time of every pass.
    """

    ALGORITHMS = ALGORITHMS

    def __init__(self, n_subtypes=2, alpha=0.1, horizontal=0, vertical=1, min_count=2):
        if int(n_subtypes) != n_subtypes or n_subtypes < 1:
            raise ValueError(f"n_subtypes must be a positive integer, got {n_subtypes}")
        if not alpha > 0:
            raise ValueError(f"alpha must be positive, got {alpha}")
        if int(min_count) != min_count or min_count < 1:
            raise ValueError(f"min_count must be a positive integer, got {min_count}")
        self.n_subtypes = int(n_subtypes)
        self.alpha = float(alpha)
        self.horizontal = horizontal
        self.vertical = int(vertical)
        self.min_count = int(min_count)
        self.history_ = []

    # ------------------------------------------------------------ fitting
    def fit(self, trees, algorithm="cvi", n_iter=30, seed=0, progress=False, callback=None):
        """Learn the subtypes' rule weights from observed trees.

        Parameters
        ----------
        trees : sequence of Tree, a path to a file of Penn-bracket trees, or a PreparedTreebank
            Training trees, with or without ROOT on top (function tags and empty elements already
            removed), or the output of `cvbayes.trees.treebank.prepare_treebank` with this model's
            settings (to prepare a treebank once for many fits).
        algorithm : {"em", "vb", "cvi"}
        n_iter : int
            Passes over the trees.
        seed : int
            Seeds the 1 % noise of the split grammar every algorithm starts from.
        progress : bool
            Show a progress bar.
        callback : callable, optional
            ``callback(model, iteration)`` after every pass with ``tables_`` set to the current
            estimates (so that ``parse`` works inside it); its time is not training time.
        """
        if algorithm not in self.ALGORITHMS:
            raise ValueError(f"unknown algorithm {algorithm!r}; choose one of {', '.join(self.ALGORITHMS)}")
        if int(n_iter) != n_iter or n_iter < 1:
            raise ValueError(f"n_iter must be a positive integer, got {n_iter}")
        if isinstance(trees, (str, os.PathLike)):
            trees = read_trees(trees)
        settings = (self.horizontal, self.vertical, self.min_count)
        if isinstance(trees, PreparedTreebank):
            prepared = trees
            if (prepared.horizontal, prepared.vertical, prepared.min_count) != settings:
                raise ValueError(f"the treebank was prepared with (horizontal, vertical, min_count) = "
                                 f"{(prepared.horizontal, prepared.vertical, prepared.min_count)}, the model "
                                 f"has {settings}")
        else:
            prepared = prepare_treebank(list(trees), horizontal=self.horizontal, vertical=self.vertical,
                                        min_count=self.min_count)
        self.grammar_ = prepared.grammar
        self.algorithm_ = algorithm
        self.objective_name_ = OBJECTIVES[algorithm]
        self._callback = callback
        layout = RowLayout(prepared.grammar, self.n_subtypes)
        start = split_grammar(prepared.grammar, self.n_subtypes, np.random.default_rng(seed))
        schedule, rule = self.ALGORITHMS[algorithm]
        with Progress(int(n_iter), algorithm, progress) as bar:
            self.history_ = bar.history
            if schedule is batch:
                counts = self._run_batch(prepared, layout, rule, start, int(n_iter), bar)
            else:
                counts = self._run_leave_one_out(prepared, start, int(n_iter), bar)
        self._set_fitted(counts, rule)
        return self

    def _run_batch(self, prepared, layout, rule, start, n_iter, bar):
        """EM (rule MAP) from the split grammar, VB (rule VB) from its expected counts."""
        structure = LatentTrees(prepared, layout, self.alpha)
        statistics = tables = None
        if rule == MAP:
            tables = start
        else:
            statistics = structure.expectations(start)[0]

        def record(iteration, objective, counts, seconds):
            bar.record(iteration, objective, seconds)
            self._call_back(iteration, counts, rule, bar.train_seconds)

        return batch(structure, rule, n_iter, record, statistics, tables)

    def _run_leave_one_out(self, prepared, start, n_iter, bar):
        """CVI (eq. 4.24): every tree's counts from the split grammar, then passes of leave-one-tree-out
        updates on the MEAN weights of the others."""
        grammar, nodes = prepared.grammar, prepared.nodes
        offsets = posterior_offsets(nodes, self.n_subtypes)
        store = np.zeros(offsets[-1], dtype=np.float32)
        counts = latent_inside_outside(nodes, start, store=store).counts
        weights = AnnotatedTables(*(table.copy() for table in start))
        longest = max_length(nodes.tree_offsets)
        state = (nodes.tree_offsets, nodes.kind, nodes.rule, nodes.left, nodes.right,
                 *(np.ascontiguousarray(rules[:, 0]) for rules in
                   (grammar.binary_rules, grammar.unary_rules, grammar.lexical_rules)),
                 *counts, parent_totals(grammar, counts), row_sizes(grammar, self.n_subtypes).astype(float),
                 self.alpha, *weights, np.empty((longest, self.n_subtypes)), np.empty((longest, self.n_subtypes)),
                 np.empty(longest), store, offsets)
        order = np.arange(nodes.n_trees, dtype=np.int64)

        def sweep(iteration):
            objective, bad = cvi_pass(state, order)
            if bad >= 0:
                raise ZeroProbabilityError(f"training tree {bad} has probability zero under the CVI weights")
            return objective

        def record(iteration, objective, seconds):
            bar.record(iteration, objective, seconds)
            self._call_back(iteration, counts, MEAN, bar.train_seconds)

        passes(sweep, n_iter, record)
        return counts

    def _call_back(self, iteration, counts, rule, train_seconds):
        if self._callback is not None:
            self.train_seconds_ = train_seconds
            self._set_fitted(AnnotatedTables(*(table.copy() for table in counts)), rule)
            self._callback(self, iteration)

    def _set_fitted(self, counts, rule):
        """The counts and the fitted table: MAP for EM, the posterior mean otherwise."""
        self.counts_ = AnnotatedTables(*counts)
        self._point_rule = MAP if rule == MAP else MEAN
        self.tables_ = RowLayout(self.grammar_, self.n_subtypes).table(self._point_rule, self.counts_, self.alpha)

    @property
    def train_seconds(self):
        """Training time of the last fit (the sum of the history's pass times)."""
        return sum(record.seconds for record in self.history_)

    # ------------------------------------------------------------ parsing
    def parser(self, decoder="max-rule"):
        """A `LatentParser` on the fitted grammar (see `parse`)."""
        self._check_fitted()
        return LatentParser(self.grammar_, self.tables_, decoder=decoder)

    def parse(self, sentences, decoder="max-rule", pruning=1e-4):
        """Parse sentences (lists of words) with the split grammar.

        Parameters
        ----------
        sentences : sequence of sequences of str
        decoder : {"max-rule", "viterbi"}
            ``"max-rule"``: the tree of coarse symbols with the largest product of anchored rule
            posteriors (Petrov and Klein 2007, max-rule-product); ``"viterbi"``: the most probable
            annotated derivation, its subtypes dropped.
        pruning : float, Pruning or None
            Coarse-to-fine pruning: chart items whose posterior under the unsplit treebank grammar is
            below this threshold are skipped (or those of a `Pruning` from
            `cvbayes.trees.latent_parse.prune_charts`); None parses the whole chart (exact).

        Returns
        -------
        list of Tree or None
            Penn trees (debinarised, ROOT removed); None for a sentence the grammar cannot derive.
        """
        return self.parser(decoder).parse(sentences, pruning).trees

    def _check_fitted(self):
        if not hasattr(self, "tables_"):
            raise RuntimeError("this PCFGLA is not fitted yet; call fit() first")

    # ------------------------------------------------------------ save/load
    def save(self, path):
        """Write the fitted model to ``path`` (a NumPy ``.npz`` archive, no pickles): the grammar, the
        expected counts (the tables follow from them), the settings and the history."""
        self._check_fitted()
        grammar = self.grammar_
        meta = {
            "format": SAVE_FORMAT,
            "n_subtypes": self.n_subtypes,
            "alpha": self.alpha,
            "horizontal": self.horizontal,
            "vertical": self.vertical,
            "min_count": self.min_count,
            "algorithm": self.algorithm_,
            "point_rule": self._point_rule,
            "history": [[r.iteration, r.objective, r.seconds] for r in self.history_],
            "symbols": list(grammar.symbols),
            "words": list(grammar.words),
        }
        arrays = {
            "binary_rules": grammar.binary_rules, "unary_rules": grammar.unary_rules,
            "lexical_rules": grammar.lexical_rules, "binary_rule_counts": grammar.binary_counts,
            "unary_rule_counts": grammar.unary_counts, "lexical_rule_counts": grammar.lexical_counts,
            "binary_counts": self.counts_.binary, "unary_counts": self.counts_.unary,
            "lexical_counts": self.counts_.lexical,
        }
        write_model(path, meta, arrays)

    @classmethod
    def load(cls, path):
        """Read a model written by `save`."""
        meta, arrays = read_model(path, SAVE_FORMAT)
        model = cls(meta["n_subtypes"], meta["alpha"], meta["horizontal"], meta["vertical"], meta["min_count"])
        model.grammar_ = TreebankGrammar(
            tuple(meta["symbols"]), tuple(meta["words"]), arrays["binary_rules"], arrays["unary_rules"],
            arrays["lexical_rules"], arrays["binary_rule_counts"], arrays["unary_rule_counts"],
            arrays["lexical_rule_counts"])
        model.algorithm_ = meta["algorithm"]
        model.objective_name_ = OBJECTIVES[model.algorithm_]
        model.history_ = [IterationRecord(int(i), o, t) for i, o, t in meta["history"]]
        model._set_fitted((arrays["binary_counts"], arrays["unary_counts"], arrays["lexical_counts"]),
                          meta["point_rule"])
        return model

