"""Inside-outside over the latent annotations of observed trees (PCFG-LA).

A PCFG with latent annotations (Matsuzaki et al. 2005; thesis §4.5.3) splits
every symbol X of a treebank grammar into H subtypes X[0], ..., X[H-1]. The
tree shape and its symbols are observed; only the subtypes are hidden. The
sum over every annotation of one tree factorises along the tree, so a
bottom-up (inside) and a top-down (outside) pass over its nodes give log Z
and the expected count of every annotated rule in O(nodes · H^3) (Matsuzaki
et al. 2005, §3; Petrov et al. 2006, §2.1). This is the E-step shared by EM
(eq. 4.7-4.10 over annotated rules), VB (eq. 4.12) and CVI (eq. 4.24): they
differ only in the rule tables passed in.

Layout of weights and counts (`AnnotatedTables`)
------------------------------------------------
Rules are those of a `TreebankGrammar` (``cvbayes.trees.treebank``), each
kind in its own table, rule ``r`` of a kind having parent
``grammar.<kind>_rules[r, 0]``:

* ``binary[r, a, b, c]``, shape (n_binary, H, H, H): A[a] -> B[b] C[c] for
  rule r = A -> B C;
* ``unary[r, a, b]``, shape (n_unary, H, H): A[a] -> B[b];
* ``lexical[r, a]``, shape (n_lexical, H): A[a] -> w.

Weights and expected counts share this layout. A Dirichlet **row** is one
annotated parent A[a]: the union over the rules r of A of
``binary[r, a, :, :]``, ``unary[r, a, :]`` and ``lexical[r, a]``. It holds
``row_sizes(grammar, H)[A]`` = n_binary(A)·H² + n_unary(A)·H + n_lexical(A)
annotated rules (the |R_A| of eq. 4.12 and 4.24), and its total is
``parent_totals(grammar, counts)[A, a]`` (the C_{A->.} of eq. 4.10-4.11).

As sparse Dirichlet rows
------------------------
`RowLayout` lays every annotated rule end to end (binary, then unary, then
lexical, each table in C order) with the row ``A * H + a`` of its parent
A[a]; the rows then have different widths, and the tables of EM, VB and CVI
come from the slot functions of `cvbayes.core.rules` with one width a row
(`normalise_rows` is the rule MAP with no pseudo-count, eq. 4.10).

Subtype 0 of the root
---------------------
The top node of every tree has its subtype fixed at 0, so Z = inside[root, 0].
The treebank puts ROOT above every tree, which pinning its subtype leaves in
effect unsplit, as in Petrov et al. (2006). The rows ROOT[a > 0] are never
used and never receive counts (a plain normalisation makes them uniform).

Scaling
-------
Each node's inside vector is divided by its maximum s_n, and log Z is the sum
of the log s_n plus log inside[root, 0]. The outside vectors are kept as
out[n] · S_n / Z, with S_n the product of the scales below and at n, so that
node posteriors are simply outside · inside and a child's outside is its
parent's divided by the parent's own s_n. Nothing grows or shrinks with the
depth of the tree: a flat phrase of 1,500 words, binarised into a chain
1,500 deep, is exact to 1e-10 (tests/trees/test_latent.py).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..core.special import FAST
from ..core.rules import MAP, slot_table
from ..core.statistics import move
from ..core.units import equal_token_chunks, max_length, parallel_over_chunks
from .grammar import BINARY, LEXICAL, UNARY
from .treebank import TreebankGrammar, TreeNodes

__all__ = [
    "AnnotatedTables",
    "LatentPass",
    "RowLayout",
    "add_posteriors",
    "add_row_totals",
    "binary_inside",
    "checked_store",
    "corpus_pass",
    "kept_tree_inside_outside",
    "latent_inside_outside",
    "normalise_rows",
    "outside_node",
    "parent_totals",
    "posterior_offsets",
    "rescale_inside",
    "row_sizes",
    "split_grammar",
    "start_outside",
    "tree_inside_outside",
    "treebank_weights",
    "zero_annotated_tables",
]


class AnnotatedTables(NamedTuple):
    """Weights or expected counts of every annotated rule (layout in the module docstring)."""

    binary: np.ndarray
    unary: np.ndarray
    lexical: np.ndarray

    @property
    def n_subtypes(self) -> int:
        return self.lexical.shape[1]


class LatentPass(NamedTuple):
    """Result of one inside-outside pass over a treebank.

    Attributes
    ----------
    log_z : ndarray, shape (n_trees,)
        log of the sum over all annotations of each tree (-inf if the weights
        give the tree zero probability; such a tree adds no counts).
    counts : AnnotatedTables
        Expected counts of every annotated rule, summed over the trees.
    """

    log_z: np.ndarray
    counts: AnnotatedTables


def zero_annotated_tables(grammar: TreebankGrammar, n_subtypes: int) -> AnnotatedTables:
    """Zero float64 tables in the `AnnotatedTables` layout of `grammar` split into `n_subtypes`."""
    h = int(n_subtypes)
    if h < 1:
        raise ValueError(f"n_subtypes must be at least 1, got {n_subtypes}")
    return AnnotatedTables(
        np.zeros((len(grammar.binary_rules), h, h, h)),
        np.zeros((len(grammar.unary_rules), h, h)),
        np.zeros((len(grammar.lexical_rules), h)),
    )


def parent_totals(grammar: TreebankGrammar, tables: AnnotatedTables) -> np.ndarray:
    """Row totals C_{A[a] -> .} (eq. 4.11 over annotated rules), shape (n_symbols, H)."""
    totals = np.zeros((grammar.n_symbols, tables.n_subtypes))
    np.add.at(totals, grammar.binary_rules[:, 0], tables.binary.sum(axis=(2, 3)))
    np.add.at(totals, grammar.unary_rules[:, 0], tables.unary.sum(axis=2))
    np.add.at(totals, grammar.lexical_rules[:, 0], tables.lexical)
    return totals


def row_sizes(grammar: TreebankGrammar, n_subtypes: int) -> np.ndarray:
    """|R_{A[a]}|: annotated rules in the row of each parent A (the same for every a), shape (n_symbols,)."""
    h = int(n_subtypes)
    n = grammar.n_symbols
    return (
        np.bincount(grammar.binary_rules[:, 0], minlength=n) * h * h
        + np.bincount(grammar.unary_rules[:, 0], minlength=n) * h
        + np.bincount(grammar.lexical_rules[:, 0], minlength=n)
    ).astype(np.int64)


class RowLayout:
    """Annotated rules laid end to end as sparse Dirichlet rows of different widths.

    Cell order is ``binary.ravel()``, ``unary.ravel()``, ``lexical.ravel()``;
    the row of a cell is ``A * H + a`` for its parent A[a], the order of
    ``parent_totals(...).ravel()``. This is the slot layout of
    `cvbayes.core.rules` (``slot_table``, ``slot_kl``, ``slot_log_prior``)
    with ``row_width[A * H + a] = row_sizes(grammar, H)[A]``: the |R_A| of
    eq. 4.12 and 4.24 over annotated rules.

    Parameters
    ----------
    grammar : TreebankGrammar
    n_subtypes : int

    Attributes
    ----------
    cell_row : ndarray, shape (n_cells,), int64
    row_width : ndarray, shape (n_symbols * H,), int64
    """

    def __init__(self, grammar: TreebankGrammar, n_subtypes: int):
        h = int(n_subtypes)
        self.grammar = grammar
        self.n_subtypes = h
        self._shapes = tuple(table.shape for table in zero_annotated_tables(grammar, h))
        subtype = np.arange(h)
        rows = []
        for rules, shape in zip(
            (grammar.binary_rules, grammar.unary_rules, grammar.lexical_rules), self._shapes
        ):
            row = rules[:, 0].astype(np.int64)[:, None] * h + subtype[None, :]
            rows.append(np.broadcast_to(row.reshape(row.shape + (1,) * (len(shape) - 2)), shape).ravel())
        self.cell_row = np.concatenate(rows)
        self.row_width = np.repeat(row_sizes(grammar, h), h)

    @property
    def n_rows(self) -> int:
        return self.row_width.shape[0]

    def flatten(self, tables: AnnotatedTables) -> np.ndarray:
        """The cells of `tables` in layout order, shape (n_cells,)."""
        return np.concatenate([np.asarray(table, dtype=np.float64).ravel() for table in tables])

    def tables(self, cells: np.ndarray) -> AnnotatedTables:
        """`AnnotatedTables` over the cells of a flat array (copies, C-contiguous)."""
        out = []
        start = 0
        for shape in self._shapes:
            size = int(np.prod(shape))
            out.append(np.ascontiguousarray(cells[start:start + size]).reshape(shape))
            start += size
        return AnnotatedTables(*out)

    def row_totals(self, tables: AnnotatedTables) -> np.ndarray:
        """C_{A[a] -> .} in row order, shape (n_rows,)."""
        return parent_totals(self.grammar, tables).ravel()

    def table(self, rule: str, counts: AnnotatedTables, alpha: float) -> AnnotatedTables:
        """The table of a `cvbayes.core.rules` rule from annotated counts under a symmetric Dir(alpha)
        on every row A[a] (eq. 4.10, 4.12, 4.24 over annotated rules)."""
        return self.tables(
            slot_table(rule, self.flatten(counts), self.cell_row, self.row_totals(counts), alpha, self.row_width)
        )


def normalise_rows(grammar: TreebankGrammar, tables: AnnotatedTables) -> AnnotatedTables:
    """Divide every row A[a] by its total (eq. 4.10 over annotated rules).

    The rule MAP of `cvbayes.core.rules` with no pseudo-count (alpha = 1): a
    row with a zero total becomes uniform over its |R_{A[a]}| rules.
    """
    return RowLayout(grammar, tables.n_subtypes).table(MAP, tables, 1.0)


def treebank_weights(grammar: TreebankGrammar) -> AnnotatedTables:
    """The unsplit treebank grammar (H = 1): p(A -> beta) = C_{A->beta} / C_{A->.}, the relative
    frequencies of eq. 4.10 with observed trees (the coarse grammar of coarse-to-fine parsing)."""
    return normalise_rows(
        grammar,
        AnnotatedTables(
            grammar.binary_counts[:, None, None, None].astype(float),
            grammar.unary_counts[:, None, None].astype(float),
            grammar.lexical_counts[:, None].astype(float),
        ),
    )


def split_grammar(
    grammar: TreebankGrammar,
    n_subtypes: int,
    rng: np.random.Generator,
    noise: float = 0.01,
) -> AnnotatedTables:
    """Split the treebank grammar into H subtypes with a little noise (Petrov et al. 2006, §2.1).

    Every annotated rule starts from its unsplit relative frequency
    p(A -> beta) = C_{A->beta} / C_{A->.} shared evenly over the children's
    subtypes (p / H² for binary, p / H for unary rules), is multiplied by
    1 + noise·u with u ~ Uniform(-1, 1) drawn independently for every
    annotated rule, and every row A[a] is renormalised. Without the noise all
    subtypes would stay identical under EM; 1 % is the amount of Petrov et
    al. (2006) and of thesis §4.5.3.

    Parameters
    ----------
    grammar : TreebankGrammar
        Rules and their treebank counts.
    n_subtypes : int
        H, the subtypes of every symbol.
    rng : numpy.random.Generator
        The source of the noise (seed it for reproducible runs).
    noise : float, default 0.01
        Relative half-width of the multiplicative noise, in [0, 1).

    Returns
    -------
    AnnotatedTables
        Rule probabilities, each row A[a] summing to 1.
    """
    if not 0.0 <= noise < 1.0:
        raise ValueError(f"noise must be in [0, 1), got {noise}")
    h = int(n_subtypes)
    probs = treebank_weights(grammar)
    shapes = ((h, h, h), (h, h), (h,))
    shares = (h * h, h, 1)
    tables = []
    for table, shape, share in zip(probs, shapes, shares):
        base = np.broadcast_to(table / share, (len(table),) + shape)
        tables.append(base * (1.0 + noise * rng.uniform(-1.0, 1.0, size=base.shape)))
    return normalise_rows(grammar, AnnotatedTables(*tables))


def posterior_offsets(nodes: TreeNodes, n_subtypes: int) -> np.ndarray:
    """Where each node's posterior block starts in a flat store, shape (n_nodes + 1,), int64.

    A node's block is its rule occurrence's posterior over annotations, laid
    out as that rule's slice of `AnnotatedTables` (binary [a, b, c], unary [a, b],
    lexical [a], C order): H³, H² or H entries. A store of
    ``offsets[-1]`` float32 holds the local statistics C^i of every tree, the
    memory CVI needs to leave a tree out (eq. 4.24): 4·(N_b H³ + N_u H² + N_l H)
    bytes for N_b binary, N_u unary and N_l lexical nodes.
    """
    h = int(n_subtypes)
    size_of_kind = np.empty(3, dtype=np.int64)
    size_of_kind[LEXICAL], size_of_kind[UNARY], size_of_kind[BINARY] = h, h * h, h * h * h
    sizes = size_of_kind[nodes.kind]
    offsets = np.zeros(len(nodes.kind) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return offsets


@njit(cache=True, fastmath=FAST)
def binary_inside(weights, r, inside, left, right, factor, out, at):
    """out[at, a] += factor · sum_{b,c} w(A_a -> B_b C_c) inside[left, b] inside[right, c] for binary
    rule r: one binary step of the inside pass (eq. 4.8 over annotations), shared by the observed trees
    here and the parser's chart (`cvbayes.trees.latent_parse`).  Rows of 2-D arrays are passed by
    index, not as views, whose reference counting would cost more than the step at small H."""
    n_sub = out.shape[1]
    for a in range(n_sub):
        total = 0.0
        for b in range(n_sub):
            left_b = inside[left, b]
            if left_b == 0.0:
                continue
            row = 0.0
            for c in range(n_sub):
                row += weights[r, a, b, c] * inside[right, c]
            total += left_b * row
        out[at, a] += factor * total


@njit(cache=True)
def rescale_inside(inside, i, scale):
    """Divide node i's inside vector by its maximum s_i, kept in ``scale[i]`` (the module docstring's
    scaling); returns log s_i, or -inf if the vector is zero or overflowed."""
    peak = 0.0
    for a in range(inside.shape[1]):
        if inside[i, a] > peak:
            peak = inside[i, a]
    if not peak > 0.0 or peak == np.inf:
        return -np.inf
    inverse = 1.0 / peak
    for a in range(inside.shape[1]):
        inside[i, a] *= inverse
    scale[i] = peak
    return np.log(peak)


@njit(cache=True)
def start_outside(inside, outside, root):
    """The root's outside vector, its subtype fixed at 0: outside = e_0 / inside[root, 0]; returns
    log inside[root, 0] (-inf if zero)."""
    root_inside = inside[root, 0]
    if root_inside == 0.0:
        return -np.inf
    for a in range(outside.shape[1]):
        outside[root, a] = 0.0
    outside[root, 0] = 1.0 / root_inside
    return np.log(root_inside)


@njit(cache=True)
def tree_inside_outside(node_kind, node_rule, node_left, node_right, first, last, binary_weights, unary_weights,
                        lexical_weights, inside, outside, scale, binary_counts, unary_counts, lexical_counts, store,
                        store_offsets):
    """Inside-outside over the annotations of one observed tree (Matsuzaki et al. 2005, §3).

    The E-step of eq. 4.8-4.9 with the tree shape fixed: the sum runs over
    the subtypes of its nodes instead of over trees.

    Parameters
    ----------
    node_kind, node_rule, node_left, node_right : ndarray
        The `TreeNodes` columns (global node indices).
    first, last : int
        The tree's nodes are ``first .. last - 1`` in post-order; the root is
        ``last - 1`` and its subtype is fixed at 0.
    binary_weights, unary_weights, lexical_weights : ndarray
        Annotated rule weights in the `AnnotatedTables` layout (EM's theta*, VB's
        theta~ or CVI's theta_bar).
    inside, outside : ndarray, shape (>= last - first, H)
        Work space; on return row ``n - first`` holds node n's scaled inside
        and outside vectors (their product is its posterior over subtypes).
    scale : ndarray, shape (>= last - first,)
        Work space: each node's inside scale s_n.
    binary_counts, unary_counts, lexical_counts : ndarray
        Expected counts of the annotated rules are added here.
    store : ndarray of float32
        If not empty, each node's posterior block is written at
        ``store[store_offsets[n]:store_offsets[n + 1]]`` (see
        `posterior_offsets`), and the counts receive these float32-rounded
        values, so that `add_posteriors` can later take out exactly what
        was put in.
    store_offsets : ndarray of int64

    Returns
    -------
    float
        log Z, the log of the tree's total weight over annotations; -inf if
        it is zero, in which case no counts are added.
    """
    n_sub = lexical_weights.shape[1]
    use_store = store.shape[0] > 0
    log_z = 0.0
    for n in range(first, last):
        i = n - first
        r = node_rule[n]
        kind = node_kind[n]
        if kind == LEXICAL:
            for a in range(n_sub):
                inside[i, a] = lexical_weights[r, a]
        elif kind == UNARY:
            child = node_left[n] - first
            for a in range(n_sub):
                total = 0.0
                for b in range(n_sub):
                    total += unary_weights[r, a, b] * inside[child, b]
                inside[i, a] = total
        else:
            inside[i, :] = 0.0
            binary_inside(binary_weights, r, inside, node_left[n] - first, node_right[n] - first, 1.0, inside, i)
        log_scale = rescale_inside(inside, i, scale)
        if log_scale == -np.inf:
            return -np.inf
        log_z += log_scale
    log_root = start_outside(inside, outside, last - 1 - first)
    if log_root == -np.inf:
        return -np.inf
    log_z += log_root

    # Top-down: reverse post-order visits every parent before its children.
    every = range(n_sub)
    for n in range(last - 1, first - 1, -1):
        i = n - first
        outside_node(node_kind[n], node_rule[n], i, node_left[n] - first, node_right[n] - first, every, every, every,
                     binary_weights, unary_weights, inside, outside, 1.0 / scale[i], binary_counts, unary_counts,
                     lexical_counts, store, store_offsets[n] if use_store else 0)
    return log_z


@njit(cache=True, fastmath=FAST)
def kept_tree_inside_outside(node_kind, node_rule, node_left, node_right, first, last, kept_offsets, kept,
                             binary_weights, unary_weights, lexical_weights, inside, outside, scale, binary_counts,
                             unary_counts, lexical_counts, store, store_offsets):
    """`tree_inside_outside` (eq. 4.8-4.9 over annotations, Matsuzaki et al. 2005
    §3) over the kept subtypes of every node: pruned subtypes have inside and outside 0.  The store,
    if not empty, takes each node's posteriors over its kept combinations (`cvbayes.trees.latent_pruned.kept_store_offsets`) and the
    counts the float32-rounded values.  Returns log Z over the kept annotations (-inf: no counts)."""
    n_sub = lexical_weights.shape[1]
    use_store = store.shape[0] > 0
    log_z = 0.0
    for n in range(first, last):
        i = n - first
        r = node_rule[n]
        kind = node_kind[n]
        for a in range(n_sub):
            inside[i, a] = 0.0
        if kind == LEXICAL:
            for x in range(kept_offsets[n], kept_offsets[n + 1]):
                a = kept[x]
                inside[i, a] = lexical_weights[r, a]
        elif kind == UNARY:
            child_node = node_left[n]
            child = child_node - first
            for x in range(kept_offsets[n], kept_offsets[n + 1]):
                a = kept[x]
                total = 0.0
                for y in range(kept_offsets[child_node], kept_offsets[child_node + 1]):
                    b = kept[y]
                    total += unary_weights[r, a, b] * inside[child, b]
                inside[i, a] = total
        else:
            left_node, right_node = node_left[n], node_right[n]
            left, right = left_node - first, right_node - first
            for x in range(kept_offsets[n], kept_offsets[n + 1]):
                a = kept[x]
                total = 0.0
                for y in range(kept_offsets[left_node], kept_offsets[left_node + 1]):
                    b = kept[y]
                    left_b = inside[left, b]
                    if left_b == 0.0:
                        continue
                    row = 0.0
                    for z in range(kept_offsets[right_node], kept_offsets[right_node + 1]):
                        c = kept[z]
                        row += binary_weights[r, a, b, c] * inside[right, c]
                    total += left_b * row
                inside[i, a] = total
        log_scale = rescale_inside(inside, i, scale)
        if log_scale == -np.inf:
            return -np.inf
        log_z += log_scale
    log_root = start_outside(inside, outside, last - 1 - first)
    if log_root == -np.inf:
        return -np.inf
    log_z += log_root

    for n in range(last - 1, first - 1, -1):
        i = n - first
        left, right = max(node_left[n], 0), max(node_right[n], 0)  # -1: no such child
        outside_node(node_kind[n], node_rule[n], i, left - first, right - first,
                     kept[kept_offsets[n]:kept_offsets[n + 1]], kept[kept_offsets[left]:kept_offsets[left + 1]],
                     kept[kept_offsets[right]:kept_offsets[right + 1]], binary_weights, unary_weights, inside,
                     outside, 1.0 / scale[i], binary_counts, unary_counts, lexical_counts, store,
                     store_offsets[n] if use_store else 0)
    return log_z


@njit(cache=True, inline="always")
def outside_node(kind, r, i, left, right, parents, lefts, rights, binary_weights, unary_weights, inside, outside,
                 inverse, binary_counts, unary_counts, lexical_counts, store, at):
    """One node's step of the top-down pass (eq. 4.8-4.9 over annotations, Matsuzaki et al. 2005 §3): the
    outside vectors of its children (work rows ``left`` and ``right``) and its rule posteriors added to the
    counts, over the subtypes ``parents`` of the node (work row ``i``, rule ``r``, ``inverse`` = 1 / s_n)
    and ``lefts``, ``rights`` of its children.  They are ``range(H)`` in `tree_inside_outside` and the
    kept lists in pruned training (`cvbayes.trees.latent_pruned`), for each of which numba compiles its own
    loops, so the dense ones keep their direct indexing.  A non-empty ``store`` takes the posteriors from
    ``at`` in the order of the lists, and the counts their float32-rounded values (see
    `tree_inside_outside`)."""
    n_sub = outside.shape[1]
    use_store = store.shape[0] > 0
    if kind == LEXICAL:
        for x, a in enumerate(parents):
            posterior = outside[i, a] * inside[i, a]
            if use_store:
                store[at + x] = posterior
                posterior = store[at + x]
            lexical_counts[r, a] += posterior
    elif kind == UNARY:
        n_left = len(lefts)
        for b in range(n_sub):
            outside[left, b] = 0.0
        for x, a in enumerate(parents):
            out_a = outside[i, a] * inverse
            for y, b in enumerate(lefts):
                weighted = out_a * unary_weights[r, a, b]
                outside[left, b] += weighted
                posterior = weighted * inside[left, b]
                if use_store:
                    cell = at + x * n_left + y
                    store[cell] = posterior
                    posterior = store[cell]
                unary_counts[r, a, b] += posterior
    else:
        n_left, n_right = len(lefts), len(rights)
        for b in range(n_sub):
            outside[left, b] = 0.0
            outside[right, b] = 0.0
        for x, a in enumerate(parents):
            out_a = outside[i, a] * inverse
            for y, b in enumerate(lefts):
                out_ab = out_a * inside[left, b]
                to_left = 0.0
                for z, c in enumerate(rights):
                    weight = binary_weights[r, a, b, c]
                    right_c = inside[right, c]
                    to_left += weight * right_c
                    outside[right, c] += out_ab * weight
                    posterior = out_ab * weight * right_c
                    if use_store:
                        cell = at + (x * n_left + y) * n_right + z
                        store[cell] = posterior
                        posterior = store[cell]
                    binary_counts[r, a, b, c] += posterior
                outside[left, b] += out_a * to_left


def checked_store(store, offsets):
    """``store`` and its node offsets (``offsets()``, computed only for a store) as the kernels take them:
    an empty store and one offset when ``store`` is None (no per-tree counts kept); ValueError unless a
    store is float32 with a slot for every posterior."""
    if store is None:
        return np.zeros(0, dtype=np.float32), np.zeros(1, dtype=np.int64)
    store_offsets = offsets()
    if store.dtype != np.float32 or store.shape != (store_offsets[-1],):
        raise ValueError(f"store must be float32 of length {store_offsets[-1]}, got {store.dtype} {store.shape}")
    return store, store_offsets


@parallel_over_chunks()
def corpus_pass(tree_offsets, node_kind, node_rule, node_left, node_right, kept_offsets, kept, chunk_bounds, longest,
                binary_weights, unary_weights, lexical_weights, binary_counts, unary_counts, lexical_counts, store,
                store_offsets, log_z):
    """`tree_inside_outside` (eq. 4.8-4.9 over annotations) on every tree, or `kept_tree_inside_outside`
    when ``kept_offsets`` is not empty (pruned training), one chunk of trees per thread and count table."""
    n_sub = lexical_weights.shape[1]
    dense = kept_offsets.shape[0] == 0
    for k in prange(len(chunk_bounds) - 1):
        inside = np.empty((longest, n_sub))
        outside = np.empty((longest, n_sub))
        scale = np.empty(longest)
        for t in range(chunk_bounds[k], chunk_bounds[k + 1]):
            first, last = tree_offsets[t], tree_offsets[t + 1]
            if dense:
                log_z[t] = tree_inside_outside(node_kind, node_rule, node_left, node_right, first, last,
                                               binary_weights, unary_weights, lexical_weights, inside, outside, scale,
                                               binary_counts[k], unary_counts[k], lexical_counts[k], store,
                                               store_offsets)
            else:
                log_z[t] = kept_tree_inside_outside(node_kind, node_rule, node_left, node_right, first, last,
                                                    kept_offsets, kept, binary_weights, unary_weights,
                                                    lexical_weights, inside, outside, scale, binary_counts[k],
                                                    unary_counts[k], lexical_counts[k], store, store_offsets)


def latent_inside_outside(
    nodes: TreeNodes,
    weights: AnnotatedTables,
    *,
    store: np.ndarray | None = None,
) -> LatentPass:
    """Expected annotated-rule counts and log Z of every tree under fixed weights.

    The E-step of EM (eq. 4.7-4.10), VB (eq. 4.12) and the initial pass of CVI
    (thesis §4.5.3) for a PCFG-LA (Matsuzaki et al. 2005): trees run in
    parallel (`prange`), one chunk of trees of about equal node counts a
    thread, each chunk adding into its own count tables (memory: one copy of
    `weights` a thread), which are summed at the end.

    Parameters
    ----------
    nodes : TreeNodes
        Rule occurrences of the trees (``cvbayes.trees.treebank.tree_nodes``).
    weights : AnnotatedTables
        Annotated rule weights, float64, in the layout of the module docstring.
    store : ndarray of float32, optional
        If given, of length ``posterior_offsets(nodes, H)[-1]``: every node's
        posterior block is written there (the per-tree counts C^i that CVI
        subtracts with `add_posteriors`).

    Returns
    -------
    LatentPass
    """
    n_sub = weights.n_subtypes
    binary_weights, unary_weights, lexical_weights = (
        np.ascontiguousarray(table, dtype=np.float64) for table in weights
    )
    bounds = equal_token_chunks(nodes.tree_offsets, n_sub ** 3)  # a binary node's H^3 products
    n_chunks = len(bounds) - 1
    store, store_offsets = checked_store(store, lambda: posterior_offsets(nodes, n_sub))
    binary_counts = np.zeros((n_chunks,) + binary_weights.shape)
    unary_counts = np.zeros((n_chunks,) + unary_weights.shape)
    lexical_counts = np.zeros((n_chunks,) + lexical_weights.shape)
    log_z = np.empty(nodes.n_trees)
    longest = max_length(nodes.tree_offsets)
    no_kept = np.zeros(0, dtype=np.int64)
    corpus_pass(nodes.tree_offsets, nodes.kind, nodes.rule, nodes.left, nodes.right, no_kept, no_kept, bounds, longest,
                binary_weights, unary_weights, lexical_weights, binary_counts, unary_counts, lexical_counts, store,
                store_offsets, log_z)
    counts = AnnotatedTables(binary_counts.sum(axis=0), unary_counts.sum(axis=0), lexical_counts.sum(axis=0))
    return LatentPass(log_z, counts)


@njit(cache=True)
def add_posteriors(tree_offsets, node_kind, node_rule, tree, store, store_offsets, sign, binary_counts, unary_counts,
                   lexical_counts):
    """Add ``sign`` times one tree's stored posteriors C^i to the counts.

    With ``sign = -1`` this leaves tree i out, C^{\\i} = C - C^i, before its
    CVI update (thesis eq. 4.24 over annotated rules); with +1 it puts the
    new C^i back. The stored float32 values are the ones the kernels added,
    so taking a tree out removes exactly what it put in.

    Parameters
    ----------
    tree_offsets, node_kind, node_rule : ndarray
        The `TreeNodes` columns.
    tree : int
        The tree's index.
    store, store_offsets : ndarray
        As filled by `inside_outside` or `tree_inside_outside`.
    sign : float
    binary_counts, unary_counts, lexical_counts : ndarray
        Counts in the `AnnotatedTables` layout, updated in place.
    """
    for n in range(tree_offsets[tree], tree_offsets[tree + 1]):
        r = node_rule[n]
        block = store[store_offsets[n]:store_offsets[n + 1]]
        kind = node_kind[n]
        if kind == LEXICAL:
            move(lexical_counts[r], block, sign)
        elif kind == UNARY:
            move(unary_counts[r], block, sign)
        else:
            move(binary_counts[r], block, sign)


@njit(cache=True)
def add_row_totals(tree_offsets, node_kind, node_rule, tree, store, store_offsets, sign, binary_parent, unary_parent,
                   lexical_parent, totals):
    """Add ``sign`` times one tree's stored posteriors to the row totals C_{A[a] -> .}.

    The companion of `add_posteriors`: CVI keeps every row's total in step
    with its counts, so the MEAN table of a rule (eq. 4.24) costs O(1)
    instead of a sum over the row.

    Parameters
    ----------
    tree_offsets, node_kind, node_rule, tree, store, store_offsets, sign
        As for `add_posteriors`.
    binary_parent, unary_parent, lexical_parent : ndarray of int32
        The parent symbol of every rule of each kind (column 0 of the
        grammar's rule arrays).
    totals : ndarray, shape (n_symbols, H)
        Updated in place.
    """
    n_sub = totals.shape[1]
    for n in range(tree_offsets[tree], tree_offsets[tree + 1]):
        r = node_rule[n]
        kind = node_kind[n]
        at = store_offsets[n]
        if kind == LEXICAL:
            parent, block = lexical_parent[r], 1
        elif kind == UNARY:
            parent, block = unary_parent[r], n_sub
        else:
            parent, block = binary_parent[r], n_sub * n_sub
        for a in range(n_sub):
            total = 0.0
            for x in range(at + a * block, at + (a + 1) * block):
                total += store[x]
            totals[parent, a] += sign * total
