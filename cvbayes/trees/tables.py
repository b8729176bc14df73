"""The kernel tables of one rule-weight table, in each semiring (numba).

A table is an (R,) array of rule weights indexed by global rule id (`CompiledGrammar`): the E-steps of
EM, VB and CVI and the samplers differ only in the table they pass in (thesis eq. 4.7-4.12, 4.15-4.16,
4.24).  The charts read it through `RuleTables` (sum, in weights) or `MaxTables` (max, in logs), whose
fields of one name hold the same thing in their semiring, so one chart routine reads either.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .grammar import CompiledGrammar

# Relative tolerance of the check that (I - U)^{-1} is non-negative.
CLOSURE_TOLERANCE = 1e-9


class RuleTables(NamedTuple):
    """Kernel tables built from one (R,) rule-weight table (`build_tables`).

    ``rule_weights`` (R,) the table itself (lexical and span weights are read
    from it); ``binary_weights`` (B,) per kernel binary rule; ``dense_binary``
    (N, N*N) W[A, B*N + C] or (0, 0) for the sparse layout;
    ``unary_weights`` U (N, N) and ``unary_closure`` (I - U)^{-1} (N, N), or
    (0, 0) without unary rules.
    """

    rule_weights: np.ndarray
    binary_weights: np.ndarray
    dense_binary: np.ndarray
    unary_weights: np.ndarray
    unary_closure: np.ndarray


class MaxTables(NamedTuple):
    """`RuleTables` in the max-product semiring (`max_tables`): the same fields in logs (-inf for a
    zero weight), ``unary_closure[a, b]`` the log weight of the best unary chain from a down to b
    (0 for the empty chain a = b), ``next_hop[a, b]`` the first symbol after a on it, and
    ``unary_index[a, b]`` the kernel unary rule a -> b (-1 if none)."""

    rule_weights: np.ndarray
    binary_weights: np.ndarray
    dense_binary: np.ndarray
    unary_closure: np.ndarray
    next_hop: np.ndarray
    unary_index: np.ndarray


@njit(cache=True, inline="always")
def rule_weight(rule_weights, rule):
    """Weight of a kernel rule: its global rule's, or 1 for a deterministic piece (-1)."""
    return 1.0 if rule < 0 else rule_weights[rule]


@njit(cache=True, inline="always")
def span_weight(kernel, rule_weights, family, substring):
    """Weight of <any> family `family` rewriting to substring id `substring` (0 if outside the family)."""
    if substring < 0 or substring >= kernel.span_count[family]:
        return 0.0
    return rule_weights[kernel.span_base[family] + substring]


@njit(cache=True, inline="always")
def n_lexical(kernel, tokens, i, k):
    """How many lexical entries can rewrite span (i, k): those of its word when k = i + 1, else none.
    The span's terminal rules are these, then every <any> family."""
    if k == i + 1:
        word = tokens[i]
        if 0 <= word < kernel.lexical_offsets.shape[0] - 1:
            return kernel.lexical_offsets[word + 1] - kernel.lexical_offsets[word]
    return 0


@njit(cache=True)
def unary_index(kernel):
    """(N, N) the kernel unary rule a -> b, or -1."""
    n = kernel.n_symbols
    index = np.full((n, n), -1, dtype=np.int64)
    for u in range(kernel.unary_parent.shape[0]):
        index[kernel.unary_parent[u], kernel.unary_child[u]] = u
    return index


@njit(cache=True)
def build_tables(kernel, rule_weights):
    """Gather the kernel tables of one (R,) rule-weight table.

    The unary closure (I - U)^{-1} = sum_n U^n sums every chain of unary
    rules; it exists and is non-negative exactly when the spectral radius of U
    is below one, which is checked (a ValueError otherwise: the weights give
    unary cycles infinite mass).  Cost O(B + N^3) with unary rules, O(B)
    without: cheap enough to rebuild per sentence for CVI (eq. 4.24).
    """
    n = kernel.n_symbols
    n_binary = kernel.binary_parent.shape[0]
    binary_weights = np.empty(n_binary)
    for b in range(n_binary):
        binary_weights[b] = rule_weight(rule_weights, kernel.binary_rule[b])
    if kernel.dense:
        dense_binary = np.zeros((n, n * n))
        for b in range(n_binary):
            dense_binary[kernel.binary_parent[b], kernel.binary_left[b] * n + kernel.binary_right[b]] = \
                binary_weights[b]
    else:
        dense_binary = np.zeros((0, 0))
    n_unary = kernel.unary_parent.shape[0]
    if n_unary > 0:
        unary = np.zeros((n, n))
        for u in range(n_unary):
            unary[kernel.unary_parent[u], kernel.unary_child[u]] += rule_weight(rule_weights, kernel.unary_rule[u])
        system = -unary
        for a in range(n):
            system[a, a] += 1.0
        try:
            closure = np.linalg.inv(system)
        except Exception:  # I - U singular: spectral radius exactly one; fails the check below
            closure = np.full((n, n), -1.0)
        for a in range(n):
            for b in range(n):
                if closure[a, b] < -CLOSURE_TOLERANCE * max(1.0, closure[a, a]) or not np.isfinite(closure[a, b]):
                    raise ValueError("unary rule weights have spectral radius >= 1: chains of unary "
                                     "rules (a cycle) have unbounded total weight")
                if closure[a, b] < 0.0:
                    closure[a, b] = 0.0
    else:
        unary = np.zeros((0, 0))
        closure = np.zeros((0, 0))
    return RuleTables(rule_weights, binary_weights, dense_binary, unary, closure)


@njit(cache=True)
def log_or_inf(w):
    return math.log(w) if w > 0.0 else -np.inf


@njit(cache=True)
def max_tables(kernel, tables):
    """The `MaxTables` of `build_tables`'s output, once per table (not per sentence).

    The best unary chains come from Floyd-Warshall in the max-product semiring: every cycle has
    weight below one (checked by `build_tables`), so best chains are simple.  O(B + N^3).
    """
    n = kernel.n_symbols
    n_binary = kernel.binary_parent.shape[0]
    log_binary = np.empty(n_binary)
    for b in range(n_binary):
        log_binary[b] = log_or_inf(tables.binary_weights[b])
    log_dense = np.log(tables.dense_binary) if kernel.dense else np.zeros((0, 0))
    log_best = np.full((n, n), -np.inf)
    next_hop = np.full((n, n), -1, dtype=np.int64)
    for u in range(kernel.unary_parent.shape[0]):
        a = kernel.unary_parent[u]
        b = kernel.unary_child[u]
        w = tables.unary_weights[a, b]
        if w > 0.0 and a != b:
            log_best[a, b] = math.log(w)
            next_hop[a, b] = b
    for a in range(n):
        log_best[a, a] = 0.0
        next_hop[a, a] = a
    for m in range(n):
        for a in range(n):
            if log_best[a, m] == -np.inf:
                continue
            for b in range(n):
                v = log_best[a, m] + log_best[m, b]
                if v > log_best[a, b]:
                    log_best[a, b] = v
                    next_hop[a, b] = next_hop[a, m]
    return MaxTables(tables.rule_weights, log_binary, log_dense, log_best, next_hop, unary_index(kernel))


def make_tables(grammar: CompiledGrammar, rule_weights) -> RuleTables:
    """`build_tables` for a compiled grammar; checks the table's shape and values."""
    weights = np.ascontiguousarray(rule_weights, dtype=np.float64)
    if weights.shape != (grammar.n_rules,):
        raise ValueError(f"rule_weights must have shape ({grammar.n_rules},), got {weights.shape}")
    if weights.size and not (np.all(np.isfinite(weights)) and weights.min() >= 0.0):
        raise ValueError("rule weights must be finite and non-negative")
    return build_tables(grammar.kernel, weights)
