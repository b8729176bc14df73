"""Coarse-to-fine pruning of the annotations during PCFG-LA training (Petrov et al. 2006, §2.3).

Training a grammar with H subtypes from one with H_c subtypes (H_c dividing H; `split_tables` splits
each coarse subtype a' into the fine subtypes a' k .. a' k + k - 1, k = H / H_c, as Petrov et al. split
each subcategory in two), the coarse grammar's posterior over the subtypes of every node of every
observed tree tells which fine subtypes matter: `keep_subtypes` keeps the fine subtype a at node n when
the coarse posterior p(n has subtype a // k | tree) is at least a threshold (Petrov et al. prune with
the previous split's grammar; Petrov and Klein 2007 prune charts at 1e-4 to 1e-5 of the sentence's
probability, and a node posterior is already relative to the tree's probability).  The set is fixed
for the whole fit, so EM on the pruned space is EM on a restricted model and its objective still never
decreases.

The E-step (`kept_inside_outside`, eq. 4.7-4.9 over annotations) then runs over the kept subtypes
only: O(K_n K_l K_r) a binary node instead of H^3.  CVI's per-tree counts C^i (eq. 4.24) are stored for
the kept combinations only (`kept_store_offsets`): K_n K_l K_r float32 a binary node, K_n K_c a unary
and K_n a lexical one, in the order of the kept lists, so the store shrinks with the pruning (at H = 16
the dense store of EWT's training trees would take 3.2 GB).  With threshold 0 every subtype is kept and
every result equals the dense kernels' of `cvbayes.trees.latent` (to rounding:
tests/trees/test_latent_pruned.py).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..core.rules import mean_cell
from ..core.units import equal_token_chunks, max_length
from .grammar import LEXICAL, UNARY
from .latent import (AnnotatedTables, LatentPass, checked_store, corpus_pass, kept_tree_inside_outside,
                     normalise_rows, tree_inside_outside)
from .treebank import TreebankGrammar, TreeNodes

__all__ = ["KeptSubtypes", "add_kept_posteriors", "keep_subtypes", "kept_inside_outside", "kept_mean_weights",
           "kept_store_offsets", "kept_tree_inside_outside", "node_posteriors", "split_tables"]


class KeptSubtypes(NamedTuple):
    """The fine subtypes an E-step visits at every tree node: node n keeps
    ``subtypes[offsets[n]:offsets[n + 1]]`` (increasing)."""

    offsets: np.ndarray
    subtypes: np.ndarray
    n_subtypes: int

    @property
    def kept_share(self) -> float:
        """Kept (node, subtype) pairs over all of them."""
        return len(self.subtypes) / ((len(self.offsets) - 1) * self.n_subtypes)


def split_tables(grammar: TreebankGrammar, coarse: AnnotatedTables, n_subtypes: int, rng: np.random.Generator,
                 noise: float = 0.01) -> AnnotatedTables:
    """Split every subtype of a trained grammar into H / H_c subtypes with a little noise (Petrov et al.
    2006, §2.1): w(A[a] -> B[b] C[c]) = w_c(A[a // k] -> B[b // k] C[c // k]) / k^2 (unary: / k) times
    1 + noise u, u ~ Uniform(-1, 1) for every annotated rule, every row renormalised."""
    h, h_coarse = int(n_subtypes), coarse.n_subtypes
    if h % h_coarse:
        raise ValueError(f"n_subtypes {h} is not a multiple of the coarse grammar's {h_coarse}")
    if not 0.0 <= noise < 1.0:
        raise ValueError(f"noise must be in [0, 1), got {noise}")
    k = h // h_coarse
    tables = []
    for table, share in zip(coarse, (k * k, k, 1)):
        fine = table
        for axis in range(1, table.ndim):
            fine = np.repeat(fine, k, axis=axis)
        fine = fine / share
        tables.append(fine * (1.0 + noise * rng.uniform(-1.0, 1.0, size=fine.shape)))
    return normalise_rows(grammar, AnnotatedTables(*tables))


@njit(cache=True)
def _node_posteriors(tree_offsets, node_kind, node_rule, node_left, node_right, longest, binary_weights,
                     unary_weights, lexical_weights, binary_scratch, unary_scratch, lexical_scratch, posteriors):
    n_sub = lexical_weights.shape[1]
    inside = np.empty((longest, n_sub))
    outside = np.empty((longest, n_sub))
    scale = np.empty(longest)
    no_store = np.zeros(0, dtype=np.float32)
    no_offsets = np.zeros(1, dtype=np.int64)
    for t in range(len(tree_offsets) - 1):
        first, last = tree_offsets[t], tree_offsets[t + 1]
        log_z = tree_inside_outside(node_kind, node_rule, node_left, node_right, first, last, binary_weights,
                                    unary_weights, lexical_weights, inside, outside, scale, binary_scratch,
                                    unary_scratch, lexical_scratch, no_store, no_offsets)
        for n in range(first, last):
            for a in range(n_sub):
                # a tree the coarse grammar cannot derive keeps every subtype
                posteriors[n, a] = inside[n - first, a] * outside[n - first, a] if log_z > -np.inf else 1.0


def node_posteriors(nodes: TreeNodes, weights: AnnotatedTables) -> np.ndarray:
    """p(node n has subtype a | its tree) under ``weights``, shape (n_nodes, H): the product of the
    scaled inside and outside vectors of `tree_inside_outside` (eq. 4.8-4.9 over annotations)."""
    weights = AnnotatedTables(*(np.ascontiguousarray(table, dtype=np.float64) for table in weights))
    scratch = [np.zeros_like(table) for table in weights]
    posteriors = np.empty((len(nodes.kind), weights.n_subtypes))
    _node_posteriors(nodes.tree_offsets, nodes.kind, nodes.rule, nodes.left, nodes.right,
                     max_length(nodes.tree_offsets), *weights, *scratch, posteriors)
    return posteriors


def keep_subtypes(nodes: TreeNodes, coarse: AnnotatedTables, n_subtypes: int, threshold: float) -> KeptSubtypes:
    """The fine subtypes a of every node whose coarse subtype a // (H / H_c) has posterior >= threshold
    under the coarse grammar (Petrov et al. 2006's pruning with the previous split's grammar)."""
    h, h_coarse = int(n_subtypes), coarse.n_subtypes
    if h % h_coarse:
        raise ValueError(f"n_subtypes {h} is not a multiple of the coarse grammar's {h_coarse}")
    if not 0.0 <= threshold < 1.0 / h_coarse:
        raise ValueError(f"the pruning threshold must be in [0, 1 / {h_coarse}), got {threshold}")
    keep = np.repeat(node_posteriors(nodes, coarse) >= threshold, h // h_coarse, axis=1)
    offsets = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum(keep.sum(axis=1), out=offsets[1:])
    return KeptSubtypes(offsets, np.nonzero(keep)[1].astype(np.int64), h)


def kept_store_offsets(nodes: TreeNodes, kept: KeptSubtypes) -> np.ndarray:
    """Where each node's block of kept posteriors starts in CVI's flat store, shape (n_nodes + 1,):
    K_n (lexical), K_n K_child (unary) or K_n K_left K_right (binary) entries, K the kept counts."""
    sizes = np.diff(kept.offsets)
    left = sizes[np.maximum(nodes.left, 0)]
    right = sizes[np.maximum(nodes.right, 0)]
    block = np.where(nodes.kind == LEXICAL, sizes, np.where(nodes.kind == UNARY, sizes * left, sizes * left * right))
    offsets = np.zeros(len(block) + 1, dtype=np.int64)
    np.cumsum(block, out=offsets[1:])
    return offsets


def kept_inside_outside(nodes: TreeNodes, weights: AnnotatedTables, kept: KeptSubtypes, *,
                        store: np.ndarray | None = None) -> LatentPass:
    """Expected annotated-rule counts and log Z of every tree over the kept subtypes (the pruned E-step
    of EM, VB and CVI's first pass; `cvbayes.trees.latent.latent_inside_outside` over the kept set).
    ``store``: float32 of length ``kept_store_offsets(nodes, kept)[-1]``, filled with the per-tree
    counts CVI leaves out."""
    if kept.n_subtypes != weights.n_subtypes:
        raise ValueError(f"the kept subtypes are of H = {kept.n_subtypes}, the weights of H = {weights.n_subtypes}")
    binary_weights, unary_weights, lexical_weights = (np.ascontiguousarray(table, dtype=np.float64)
                                                      for table in weights)
    steps = np.zeros(len(nodes.tree_offsets), dtype=np.int64)  # chunks of equal binary-node work
    np.cumsum(np.add.reduceat(np.diff(kept_store_offsets(nodes, kept)), nodes.tree_offsets[:-1])
              if nodes.n_trees else np.zeros(0, dtype=np.int64), out=steps[1:])
    bounds = equal_token_chunks(steps)
    n_chunks = len(bounds) - 1
    store, store_offsets = checked_store(store, lambda: kept_store_offsets(nodes, kept))
    counts = [np.zeros((n_chunks,) + table.shape) for table in (binary_weights, unary_weights, lexical_weights)]
    log_z = np.empty(nodes.n_trees)
    corpus_pass(nodes.tree_offsets, nodes.kind, nodes.rule, nodes.left, nodes.right, kept.offsets, kept.subtypes,
                bounds, max_length(nodes.tree_offsets), binary_weights, unary_weights, lexical_weights, *counts, store,
                store_offsets, log_z)
    return LatentPass(log_z, AnnotatedTables(*(table.sum(axis=0) for table in counts)))


@njit(cache=True)
def add_kept_posteriors(tree_offsets, node_kind, node_rule, node_left, node_right, kept_offsets, kept, tree, store,
                        store_offsets, sign, with_counts, binary_parent, unary_parent, lexical_parent, binary_counts,
                        unary_counts, lexical_counts, totals):
    """Add ``sign`` times one tree's stored kept posteriors C^i to the row totals C_{A[a] -> .} and, if
    ``with_counts``, to the counts: with -1 CVI leaves tree i out (eq. 4.24); with +1, after
    `kept_tree_inside_outside` has put the new counts in, it brings the totals in step.  The pruned
    companion of `cvbayes.trees.latent.add_posteriors` and `add_row_totals`."""
    for n in range(tree_offsets[tree], tree_offsets[tree + 1]):
        r = node_rule[n]
        kind = node_kind[n]
        cell = store_offsets[n]
        for x in range(kept_offsets[n], kept_offsets[n + 1]):
            a = kept[x]
            total = 0.0
            if kind == LEXICAL:
                value = sign * np.float64(store[cell])
                if with_counts:
                    lexical_counts[r, a] += value
                total += value
                cell += 1
                totals[lexical_parent[r], a] += total
            elif kind == UNARY:
                child = node_left[n]
                for y in range(kept_offsets[child], kept_offsets[child + 1]):
                    value = sign * np.float64(store[cell])
                    if with_counts:
                        unary_counts[r, a, kept[y]] += value
                    total += value
                    cell += 1
                totals[unary_parent[r], a] += total
            else:
                left, right = node_left[n], node_right[n]
                for y in range(kept_offsets[left], kept_offsets[left + 1]):
                    b = kept[y]
                    for z in range(kept_offsets[right], kept_offsets[right + 1]):
                        value = sign * np.float64(store[cell])
                        if with_counts:
                            binary_counts[r, a, b, kept[z]] += value
                        total += value
                        cell += 1
                totals[binary_parent[r], a] += total


@njit(cache=True)
def kept_mean_weights(first, last, node_kind, node_rule, node_left, node_right, kept_offsets, kept, binary_parent,
                      unary_parent, lexical_parent, binary_counts, unary_counts, lexical_counts, totals, row_size,
                      alpha, binary_weights, unary_weights, lexical_weights):
    """CVI's surrogate weights theta_bar (eq. 4.24, `cvbayes.core.rules.mean_cell`) of the kept
    annotated rules that nodes first..last-1 use, from the other trees' counts and row totals."""
    for n in range(first, last):
        r = node_rule[n]
        kind = node_kind[n]
        for x in range(kept_offsets[n], kept_offsets[n + 1]):
            a = kept[x]
            if kind == LEXICAL:
                parent = lexical_parent[r]
                lexical_weights[r, a] = mean_cell(lexical_counts[r, a], alpha, totals[parent, a],
                                                  alpha * row_size[parent])
            elif kind == UNARY:
                parent = unary_parent[r]
                child = node_left[n]
                for y in range(kept_offsets[child], kept_offsets[child + 1]):
                    b = kept[y]
                    unary_weights[r, a, b] = mean_cell(unary_counts[r, a, b], alpha, totals[parent, a],
                                                       alpha * row_size[parent])
            else:
                parent = binary_parent[r]
                left, right = node_left[n], node_right[n]
                for y in range(kept_offsets[left], kept_offsets[left + 1]):
                    b = kept[y]
                    for z in range(kept_offsets[right], kept_offsets[right + 1]):
                        c = kept[z]
                        binary_weights[r, a, b, c] = mean_cell(binary_counts[r, a, b, c], alpha,
                                                               totals[parent, a], alpha * row_size[parent])
