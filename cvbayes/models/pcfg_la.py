"""PCFGs with latent annotations (Matsuzaki et al. 2005; thesis §4.5.3) and three learners.

Every symbol X of a treebank grammar is split into H subtypes X[0..H-1]; the tree shapes and symbols are
observed, the subtypes hidden.  ``PCFGLA(algorithm=...).fit(trees)`` runs EM, VB or CVI: all three run
inside-outside over the annotations of the observed trees (`cvbayes.trees.latent`) and differ only in
the parameter rule (`cvbayes.core.rules`) and the schedule (`cvbayes.schedules`), which `ALGORITHMS`
names.  A Dirichlet row is one annotated parent A[a]: its binary, unary and lexical rules together, the
|R_A| = n_binary(A) H^2 + n_unary(A) H + n_lexical(A) outcomes of eq. 4.12 and 4.24 (`RowLayout`).

Starts follow the thesis (after Petrov et al. 2006): EM from the treebank grammar split with 1 % noise;
VB and CVI from the expected counts under that split grammar (CVI keeps every tree's own counts, in
float32, to leave them out, eq. 4.24).  ``parse`` runs the coarse-to-fine CKY parser of
`cvbayes.trees.latent_parser` on the fitted grammar: the MAP table for EM, the posterior mean otherwise.
"""
from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np
from numba import njit

from ..core.rules import MAP, MEAN, VB, check_prior, mean_cell, slot_kl, slot_log_prior
from ..core.units import ZeroProbabilityError, max_length
from ..data.trees import read_trees
from ..schedules import Algorithm, batch, leave_one_out
from ..schedules.driver import check_positive_int
from ..trees.grammar import LEXICAL, UNARY
from ..trees.latent import (AnnotatedTables, RowLayout, add_posteriors, add_row_totals, latent_inside_outside,
                            parent_totals, posterior_offsets, row_sizes, split_grammar, tree_inside_outside)
from ..trees.latent_parser import LatentParser
from ..trees.latent_pruned import (add_kept_posteriors, keep_subtypes, kept_inside_outside, kept_mean_weights,
                                   kept_store_offsets, kept_tree_inside_outside, split_tables)
from ..trees.treebank import PreparedTreebank, TreebankGrammar, TreeNodes, prepare_treebank
from .base import BayesModel
from .shards import Sharding

__all__ = ["ALGORITHMS", "OBJECTIVES", "PCFGLA"]

ALGORITHMS = {
    "em": Algorithm(batch, MAP, "tree", "inside-outside over annotations, thesis eq. 4.5-4.10"),
    "vb": Algorithm(batch, VB, "tree", "thesis eq. 4.12 over annotated rules"),
    "cvi": Algorithm(leave_one_out, MEAN, "tree", "thesis eq. 4.24 over annotated rules"),
}

OBJECTIVES = {
    "em": "log p(trees | theta) + log p(theta) up to a constant (the log-likelihood when alpha <= 1)",
    "vb": "evidence lower bound L^VI (eq. 4.3) over the annotations",
    "cvi": "sum over trees of log Z under the surrogate weights (eq. 4.24): a leave-one-tree-out predictive "
           "log-likelihood of the annotations",
}

# what fit(client=...) runs (cvbayes.models.tree_shards)
SHARDED_ALGORITHMS = ("em", "vb")


class Treebank(NamedTuple):
    """What `PCFGLA._prepare` makes of fit's input: the prepared treebank and fit's shard options
    (`cvbayes.models.shards.Sharding`)."""

    prepared: PreparedTreebank
    sharding: Sharding = Sharding()


class LatentTrees:
    """The batch structure of EM and VB (`cvbayes.schedules.batch`): observed trees, hidden subtypes.

    Statistics are `AnnotatedTables` of expected counts; tables come from them by a rule of
    `cvbayes.core.rules` over the rows of `RowLayout`.
    """

    def __init__(self, nodes: TreeNodes, layout: RowLayout, alpha: float, kept=None):
        self.nodes = nodes
        self.layout = layout
        self.alpha = alpha
        self.kept = kept

    def tables(self, statistics, rule):
        """MAP (eq. 4.10) or VB (eq. 4.12) tables of the counts (a checkpoint gives them back as a tuple)."""
        return self.layout.table(rule, AnnotatedTables(*statistics), self.alpha)

    def expectations(self, tables):
        """Expected annotated-rule counts and sum log Z over the trees (eq. 4.7-4.9), over the kept
        subtypes when training is pruned (`cvbayes.trees.latent_pruned`)."""
        result = (latent_inside_outside(self.nodes, tables) if self.kept is None
                  else kept_inside_outside(self.nodes, tables, self.kept))
        return result.counts, float(result.log_z.sum())

    def penalty(self, rule, statistics, tables):
        """MAP: the log prior of the tables; VB: minus KL(q(theta) || p(theta)) of the counts."""
        layout = self.layout
        statistics = None if statistics is None else AnnotatedTables(*statistics)
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


@njit(cache=True)
def _update_tree_kept(state, tree):
    """`_update_tree` over the kept subtypes of pruned training (`cvbayes.trees.latent_pruned`): the
    tree's stored counts are those of its kept combinations only."""
    (tree_offsets, node_kind, node_rule, node_left, node_right, kept_offsets, kept, binary_parent, unary_parent,
     lexical_parent, binary_counts, unary_counts, lexical_counts, totals, row_size, alpha, binary_weights,
     unary_weights, lexical_weights, inside, outside, scale, store, store_offsets) = state
    first = tree_offsets[tree]
    last = tree_offsets[tree + 1]
    add_kept_posteriors(tree_offsets, node_kind, node_rule, node_left, node_right, kept_offsets, kept, tree, store,
                        store_offsets, -1.0, True, binary_parent, unary_parent, lexical_parent, binary_counts,
                        unary_counts, lexical_counts, totals)
    kept_mean_weights(first, last, node_kind, node_rule, node_left, node_right, kept_offsets, kept, binary_parent,
                      unary_parent, lexical_parent, binary_counts, unary_counts, lexical_counts, totals, row_size,
                      alpha, binary_weights, unary_weights, lexical_weights)
    log_z = kept_tree_inside_outside(node_kind, node_rule, node_left, node_right, first, last, kept_offsets, kept,
                                     binary_weights, unary_weights, lexical_weights, inside, outside, scale,
                                     binary_counts, unary_counts, lexical_counts, store, store_offsets)
    if log_z > -np.inf:
        add_kept_posteriors(tree_offsets, node_kind, node_rule, node_left, node_right, kept_offsets, kept, tree,
                            store, store_offsets, 1.0, False, binary_parent, unary_parent, lexical_parent,
                            binary_counts, unary_counts, lexical_counts, totals)
    return log_z


@njit(cache=True)
def cvi_pass_kept(state, order):
    """One pruned CVI pass over the trees in ``order``."""
    return leave_one_out(_update_tree_kept, state, order)


def _raise_if_bad(tree):
    if tree >= 0:
        raise ZeroProbabilityError(f"training tree {tree} has probability zero under the CVI weights")


class CollapsedTrees:
    """CVI's state (eq. 4.24): every tree's annotated-rule counts from the start grammar (float32, to
    leave them out; of the kept subtypes only when training is pruned), the global counts and row totals
    they sum to, and the kernels' work arrays."""

    def __init__(self, prepared, n_subtypes, alpha, start, checkpoint, kept=None):
        grammar, nodes = prepared.grammar, prepared.nodes
        offsets = posterior_offsets(nodes, n_subtypes) if kept is None else kept_store_offsets(nodes, kept)
        store = np.zeros(offsets[-1], dtype=np.float32)
        self.counts = (latent_inside_outside(nodes, start, store=store) if kept is None
                       else kept_inside_outside(nodes, start, kept, store=store)).counts
        totals = parent_totals(grammar, self.counts)
        weights = AnnotatedTables(*(table.copy() for table in start))
        longest = max_length(nodes.tree_offsets)
        self.sweep_kernel = cvi_pass if kept is None else cvi_pass_kept
        self.state = (nodes.tree_offsets, nodes.kind, nodes.rule, nodes.left, nodes.right,
                      *(() if kept is None else (kept.offsets, kept.subtypes)),
                      *(np.ascontiguousarray(rules[:, 0]) for rules in
                        (grammar.binary_rules, grammar.unary_rules, grammar.lexical_rules)),
                      *self.counts, totals, row_sizes(grammar, n_subtypes).astype(float), alpha, *weights,
                      np.empty((longest, n_subtypes)), np.empty((longest, n_subtypes)), np.empty(longest), store,
                      offsets)
        self.order = np.arange(nodes.n_trees, dtype=np.int64)
        checkpoint.track_arrays("cvi", {"binary": self.counts.binary, "unary": self.counts.unary,
                                        "lexical": self.counts.lexical, "totals": totals, "store": store})

    def sweep(self, iteration):
        objective, bad = self.sweep_kernel(self.state, self.order)
        _raise_if_bad(bad)
        return objective

    def current(self):
        return self.counts


# ------------------------------------------------------------------ the model
class PCFGLA(BayesModel):
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
    algorithm : {"em", "vb", "cvi"}
        Default "cvi".
    n_iter : int
        Passes over the trees.
    n_init : int
        Restarts from seeds random_state, random_state + 1, ...; the best last objective is kept.
    random_state : int
        Seeds the 1 % noise of the split grammar every algorithm starts from.
    pruning : float or None
        With ``fit(trees, coarse=model)``: every E-step skips, at every tree node, the subtypes whose
        coarse subtype has posterior below this threshold under the coarse model's grammar (Petrov et
        al. 2006's pruning with the previous split's grammar; `cvbayes.trees.latent_pruned`), and CVI
        stores its per-tree counts for the kept subtypes only.  None (or 0): every subtype is kept.

    ``fit(trees)`` takes a sequence of Tree, a path to a file of Penn-bracket trees, or a
    PreparedTreebank: training trees, with or without ROOT on top (function tags and empty elements
    already removed), or the output of `cvbayes.trees.treebank.prepare_treebank` with this model's
    settings (to prepare a treebank once for many fits); and besides `BayesModel.fit`'s arguments

    coarse : PCFGLA, optional
        A fitted model of the same treebank whose ``n_subtypes`` divides this one's: the fit starts from
        its grammar, each subtype split in ``n_subtypes / coarse.n_subtypes`` with 1 % noise (Petrov et
        al. 2006's hierarchical splitting), instead of from the split treebank grammar, and ``pruning``
        prunes with it (not with a client).
    client : dask.distributed.Client, optional
        em, vb: every E-step on the client's workers, each on its shard of whole trees (their rule
        occurrences, saved once and memory-mapped; `cvbayes.models.tree_shards`); the same run as in one
        process up to the order of the sums.  Needs ``cvbayes[distributed]``.
    n_shards, shard_folder : optional
        How many shards and the folder they are kept in (`cvbayes.models.shards.Sharding`).

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
    shard_timings_ : on shards, a `cvbayes.models.shards.PassTiming` a pass (compute seconds per shard,
        bytes sent and returned, broadcast, reduction and scheduler overhead).
    """

    MODEL_NAME = "pcfg-la"
    ALGORITHMS = ALGORITHMS
    OBJECTIVES = OBJECTIVES
    FITTED = "tables_"
    FIT_OPTIONS = ("coarse", "client", "n_shards", "shard_folder")

    def __init__(self, n_subtypes=2, alpha=0.1, horizontal=0, vertical=1, min_count=2, *, algorithm="cvi",
                 n_iter=30, n_init=1, random_state=0, pruning=None):
        self._keep_params(locals())
        self.n_subtypes = check_positive_int("n_subtypes", n_subtypes)
        self.alpha = check_prior("alpha", alpha)
        self.min_count = check_positive_int("min_count", min_count)
        self._check_learner("n_iter", "n_init")
        self.vertical = int(vertical)
        if pruning is not None and not 0 <= pruning < 1:
            raise ValueError(f"pruning must be a threshold in [0, 1) or None, got {pruning}")

    # ------------------------------------------------------------ fit's hooks
    def _prepare(self, trees, y=None, coarse=None, client=None, n_shards=None, shard_folder=None):
        """The treebank prepared with this model's settings (binarised, rare words as signatures), with
        fit's shard options, and the coarse model's grammar to split and prune with (checked against the
        treebank's)."""
        sharding = Sharding.checked(self.algorithm, client, n_shards, shard_folder, SHARDED_ALGORITHMS)
        if client is not None and coarse is not None and self.pruning:
            raise ValueError("pruned training (pruning with coarse=...) does not run on a client yet")
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
        self._coarse = None if coarse is None else self._check_coarse(coarse, prepared.grammar)
        return Treebank(prepared, sharding)

    def _check_coarse(self, coarse, grammar):
        """The tables of a fitted coarse PCFGLA of the same treebank grammar with H_c dividing H."""
        if not isinstance(coarse, PCFGLA):
            raise TypeError(f"coarse must be a fitted PCFGLA, got {type(coarse).__name__}")
        coarse._check_fitted()
        if self.n_subtypes % coarse.n_subtypes:
            raise ValueError(f"n_subtypes {self.n_subtypes} is not a multiple of the coarse model's "
                             f"{coarse.n_subtypes}")
        theirs = coarse.grammar_
        if theirs.symbols != grammar.symbols or theirs.words != grammar.words or not all(
                np.array_equal(a, b) for a, b in ((theirs.binary_rules, grammar.binary_rules),
                                                  (theirs.unary_rules, grammar.unary_rules),
                                                  (theirs.lexical_rules, grammar.lexical_rules))):
            raise ValueError("the coarse model was fitted on another treebank grammar (symbols, words or rules "
                             "differ)")
        return coarse.tables_

    def _kept(self, prepared):
        """The subtypes pruned training visits (None: all); their share is kept in ``kept_share_``."""
        if self._coarse is None or not self.pruning:
            self.kept_share_ = 1.0
            return None
        kept = keep_subtypes(prepared.nodes, self._coarse, self.n_subtypes, self.pruning)
        self.kept_share_ = kept.kept_share
        return kept

    def _fingerprint(self, data):
        nodes, grammar = data.prepared.nodes, data.prepared.grammar
        return (nodes.tree_offsets, nodes.kind, nodes.rule, nodes.left, nodes.right, grammar.binary_rules,
                grammar.unary_rules, grammar.lexical_rules)

    def _start(self, prepared, run):
        """The treebank grammar, or the coarse model's, split into subtypes with 1 % noise (Petrov et al.
        2006)."""
        if self._coarse is not None:
            return split_tables(prepared.grammar, self._coarse, self.n_subtypes, run.rng)
        return split_grammar(prepared.grammar, self.n_subtypes, run.rng)

    def _batch(self, data, run):
        """EM (rule MAP) from the split grammar, VB (rule VB) from its expected counts; the E-steps on the
        shards of a client with one (`cvbayes.models.tree_shards`)."""
        prepared = data.prepared
        structure = LatentTrees(prepared.nodes, RowLayout(prepared.grammar, self.n_subtypes), self.alpha,
                                self._kept(prepared))
        start = self._start(prepared, run)
        sharded = data.sharding.client is not None
        if sharded:
            from .tree_shards import pcfg_la_batch
            structure = pcfg_la_batch(structure, data.sharding, self._fingerprint(data))
        if run.how.rule == MAP:
            return structure, None, start
        counts = structure.expectations(start, start=True) if sharded else structure.expectations(start)
        return structure, counts[0], None

    def _collapsed(self, data, run):
        """CVI (eq. 4.24): every tree's counts from the split grammar, then passes of leave-one-tree-out
        updates on the MEAN weights of the others."""
        return CollapsedTrees(data.prepared, self.n_subtypes, self.alpha, self._start(data.prepared, run),
                              run.checkpoint, self._kept(data.prepared))

    def _set_fitted(self, counts, rule, data=None):
        """The counts (a copy: CVI's keep changing) and the fitted table: MAP for EM, the posterior mean
        otherwise."""
        self.counts_ = AnnotatedTables(*(np.array(table) for table in counts))
        self._point_rule = MAP if rule == MAP else MEAN
        self.tables_ = RowLayout(self.grammar_, self.n_subtypes).table(self._point_rule, self.counts_, self.alpha)

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
            `cvbayes.trees.latent_parser.prune_charts`); None parses the whole chart (exact).

        Returns
        -------
        list of Tree or None
            Penn trees (debinarised, ROOT removed); None for a sentence the grammar cannot derive.
        """
        return self.parser(decoder).parse(sentences, pruning).trees

    # ------------------------------------------------------------ save/load
    def _saved(self):
        """The grammar, the expected counts (the tables follow from them) and the settings."""
        grammar = self.grammar_
        meta = {"n_subtypes": self.n_subtypes, "alpha": self.alpha, "horizontal": self.horizontal,
                "vertical": self.vertical, "min_count": self.min_count, "point_rule": self._point_rule,
                "symbols": list(grammar.symbols), "words": list(grammar.words)}
        arrays = {
            "binary_rules": grammar.binary_rules, "unary_rules": grammar.unary_rules,
            "lexical_rules": grammar.lexical_rules, "binary_rule_counts": grammar.binary_counts,
            "unary_rule_counts": grammar.unary_counts, "lexical_rule_counts": grammar.lexical_counts,
            "binary_counts": self.counts_.binary, "unary_counts": self.counts_.unary,
            "lexical_counts": self.counts_.lexical,
        }
        return meta, arrays

    @classmethod
    def _from_saved(cls, meta, arrays, path):
        model = cls(meta["n_subtypes"], meta["alpha"], meta["horizontal"], meta["vertical"], meta["min_count"])
        model.grammar_ = TreebankGrammar(
            tuple(meta["symbols"]), tuple(meta["words"]), arrays["binary_rules"], arrays["unary_rules"],
            arrays["lexical_rules"], arrays["binary_rule_counts"], arrays["unary_rule_counts"],
            arrays["lexical_rule_counts"])
        model._set_fitted((arrays["binary_counts"], arrays["unary_counts"], arrays["lexical_counts"]),
                          meta["point_rule"])
        return model
