"""The adaptor grammar's numba kernels: its rule tables and its units for the schedules of `cvbayes.schedules`.

An adaptor grammar runs on the PCFG's tree kernels (`cvbayes.trees.inside_outside`) through its *PCFG
approximation* (Johnson, Griffiths and Goldwater 2007, §4): every adapted nonterminal X gets a span
family ``X -> <any>`` whose weight at a substring s is the mass of X's cache on yields s, and X's own
(base) rules are scaled by the mass left to the base distribution,

    inside(X, i, k) = cache_X(s_ik) + base_X * sum_{X -> beta} theta_{X -> beta} inside(beta, i, k).

Inside-outside over that grammar gives, besides the rule counts, the expected number of X-nodes over
every span (its *customers*, from the span marginals) and the expected number served by the cache
(the span family's rule counts); customers served by the base open a new table.  The three algorithms
only change the weights (`cvbayes.models.adaptor` documents the approximations):

* VB (Cohen, Blei and Smith 2010): cache_X(s_k) = exp E[log pi_k] over a truncated stick of the
  grammaton's K yields, base_X = exp E[log prod_k (1 - v_k)], theta = exp-digamma (thesis eq. 4.12);
* CVI: the Pitman-Yor predictive of everything but the utterance, cache_X(s) = (n_s - a t_s) /
  (n + b), base_X = (b + a T) / (n + b), theta the MEAN rule (thesis eq. 4.24), with the expected
  tables t_s a function of the customers n_s (thesis eq. 5.35,
  `cvbayes.core.restaurants.expected_table_count`).

The rule layout is `cvbayes.models.adaptor.layout.RuleLayout`.  The collapsed learners' state is the
named tuples below (numba reads their fields by name).
"""
import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ...core.restaurants import py_expected_tables
from ...core.rules import log_geometric_cell, mean_cell
from ...core.units import parallel_over_chunks
from ...schedules import leave_one_out
from ...trees.grammar import BINARY, LEXICAL, UNARY
from ...trees.inside_outside import build_tables, chart_buffers, sentence_rule_counts, sentence_sample


class Restaurants(NamedTuple):
    """The global statistics of the collapsed learners: CVI's expected counts, the sampler's counts.

    ``counts`` (R,) base-rule counts; ``row_totals`` (n_nonterminals,) their row sums; ``rule_parent``,
    ``alpha``, ``row_prior``, ``cache_of``, ``adapted_of`` as the rule layout; ``counted_symbol`` the kernel
    symbols of the adapted nonterminals whose customers an utterance's chart counts (CVI: those outside
    every adapted subtree; the sampler: all); ``customers`` and ``tables`` (R,) at cache rules, n_s and
    t_s of yield s; ``total_customers`` and ``total_tables`` (M,), n and T of each adapted X;
    ``discount`` and ``concentration`` (M,), a and b; ``table`` (R,) the work table a unit's weights are
    written to (only at its cells).  CVI only: ``top_rule`` (R,) bool, a base rule outside every adapted
    subtree (counted from the utterances); ``base_mass`` (R,) H_X(s), the probability that X's base rules
    generate yield s, at cache rules; ``log_empty`` (R,) log q(n_s = 0) = sum_m log q(n^m_s = 0) and
    ``variance`` (R,) sum_m q(n^m_s > 0) q(n^m_s = 0) at cache rules (m: the units whose customers n_s
    sums); ``reference_tables`` and ``reference_customers`` (M,) T_X and n_X at the last table refresh,
    which the yields' tables are seated with during a pass (so that each t_s is a function of its own
    statistics); ``predictive`` (1,) which
    predictive `predictive_weights` takes (FIRST_ORDER, ZERO_EXACT or SECOND_ORDER; the sampler's is
    FIRST_ORDER, exact for its whole counts).
    """

    counts: np.ndarray
    row_totals: np.ndarray
    rule_parent: np.ndarray
    alpha: float
    row_prior: np.ndarray
    cache_of: np.ndarray
    adapted_of: np.ndarray
    counted_symbol: np.ndarray
    customers: np.ndarray
    tables: np.ndarray
    total_customers: np.ndarray
    total_tables: np.ndarray
    discount: np.ndarray
    concentration: np.ndarray
    table: np.ndarray
    top_rule: np.ndarray
    base_mass: np.ndarray
    log_empty: np.ndarray
    variance: np.ndarray
    reference_tables: np.ndarray
    reference_customers: np.ndarray
    predictive: np.ndarray


# the cache predictives of `predictive_weights` (module notes of `cvbayes.models.adaptor`)
FIRST_ORDER, ZERO_EXACT, SECOND_ORDER = 0, 1, 2
PREDICTIVES = {"first-order": FIRST_ORDER, "zero-exact": ZERO_EXACT, "second-order": SECOND_ORDER}


def empty_restaurants(compiled, layout, alpha, counted_symbol, discount, concentration,
                      predictive=FIRST_ORDER) -> Restaurants:
    """Restaurants without customers or counts (a fresh copy of discount and concentration)."""
    n_rules, n_adapted = compiled.n_rules, layout.adapted_symbol.shape[0]
    return Restaurants(np.zeros(n_rules), np.zeros(compiled.n_nonterminals), compiled.rule_parent, float(alpha),
                       layout.row_prior, layout.cache_of, layout.adapted_of, counted_symbol, np.zeros(n_rules),
                       np.zeros(n_rules), np.zeros(n_adapted), np.zeros(n_adapted), discount.copy(),
                       concentration.copy(), np.zeros(n_rules), np.zeros(n_rules, dtype=np.bool_),
                       np.zeros(n_rules), np.zeros(n_rules), np.zeros(n_rules), np.zeros(n_adapted),
                       np.zeros(n_adapted), np.array([predictive], np.int64))


class Sentences(NamedTuple):
    """The units as the tree kernels read them (a `SentenceBatch`), their cells (`cvbayes.trees.cells`) and
    how many utterances each stands for (``weight``: 1, or the copies of an utterance type)."""

    kernel: object
    tokens: np.ndarray
    offsets: np.ndarray
    span_ids: np.ndarray
    span_offsets: np.ndarray
    cell_offsets: np.ndarray
    cell_rules: np.ndarray
    weight: np.ndarray


class Local(NamedTuple):
    """Each sentence's statistics, float64 aligned with ``cell_rules``: its expected rule counts (cache
    cells: its expected cache uses) and, at cache cells of the counted adapted nonterminals, its expected
    customers."""

    counts: np.ndarray
    customers: np.ndarray


class Work(NamedTuple):
    """Scratch of one unit update: rule counts and customers (R,) kept at zero between units, the dense
    binary outside scratch, the chart buffers and the span marginals."""

    scratch_counts: np.ndarray
    scratch_customers: np.ndarray
    binary_outer: np.ndarray
    buffers: tuple
    marginals: np.ndarray


class NestedShares(NamedTuple):
    """The nested adapted nodes of one table of every yield c of a parent adapted X (its table chart at the
    last refresh), sparse by c: ``offsets`` (R + 1,) into ``rules`` (int32: the nested Y's cache rule of
    yield s) and ``expected`` (m_{c,s}, the expected Y-nodes over s in one base parse of c); ``followers``
    (M,) the adapted Y that have entries.  Empty (offsets all 0) when no unit's move reaches a nested restaurant (the
    start)."""

    offsets: np.ndarray
    rules: np.ndarray
    expected: np.ndarray
    followers: np.ndarray


def no_nested_shares(n_rules, n_adapted) -> NestedShares:
    """`NestedShares` without entries: the units' moves leave the nested restaurants alone."""
    return NestedShares(np.zeros(n_rules + 1, dtype=np.int64), np.zeros(0, dtype=np.int32), np.zeros(0),
                        np.zeros(n_adapted, dtype=np.bool_))


class CviState(NamedTuple):
    """Everything CVI's unit update reads and writes."""

    sentences: Sentences
    model: Restaurants
    local: Local
    work: Work
    nested: NestedShares


# ------------------------------------------------------------------ one sentence
@njit(cache=True)
def sentence_customers(kernel, tokens, spans, marginals, adapted_symbol, out):
    """Add the expected customers of every adapted nonterminal to ``out`` (R,) at its cache rules.

    ``marginals[i, k, A]`` (from `sentence_inside_outside`) is the expected number of A-nodes over
    tokens i..k-1; an X-node over a span with substring s is one customer of X's restaurant at yield
    s, recorded at the global rule ``span_base[family of X] + s``.
    """
    n_tokens = tokens.shape[0]
    width = n_tokens + 1
    n_families = kernel.span_parent.shape[0]
    for x in range(adapted_symbol.shape[0]):
        symbol = adapted_symbol[x]
        family = -1
        for f in range(n_families):
            if kernel.span_parent[f] == symbol:
                family = f
        for i in range(n_tokens):
            for k in range(i + 1, n_tokens + 1):
                value = marginals[i, k, symbol]
                if value == 0.0:
                    continue
                substring = spans[i * width + k]
                out[kernel.span_base[family] + substring] += value


@njit(cache=True)
def sentence_expectations(kernel, tables, tokens, spans, buffers, binary_outer, marginals, adapted_symbol,
                          counts, customers):
    """Inside-outside on one sentence: add its expected rule counts to ``counts`` and its expected
    customers to ``customers`` (both (R,)); returns log Z (-inf and nothing added without a tree)."""
    log_z = sentence_rule_counts(kernel, tables, tokens, spans, buffers, counts, binary_outer, marginals)
    if log_z == -np.inf:
        return log_z
    sentence_customers(kernel, tokens, spans, marginals, adapted_symbol, customers)
    return log_z


# ------------------------------------------------------------------ batch (VB)
@njit(cache=True)
def chunk_workspace(kernel, offsets, first, last):
    """The chart buffers, span marginals and dense binary-outside scratch for sentences first..last-1."""
    longest = 1
    for i in range(first, last):
        longest = max(longest, offsets[i + 1] - offsets[i])
    outer_size = kernel.n_symbols if kernel.dense else 0
    return (chart_buffers(kernel, longest), np.zeros((longest + 1, longest + 1, kernel.n_symbols)),
            np.zeros((outer_size, outer_size * outer_size)))


@parallel_over_chunks()
def batch_expectations(kernel, tables, tokens, offsets, span_ids, span_offsets, chunk_bounds, n_rules,
                       adapted_symbol):
    """Expected rule counts and customers (R,) of many sentences under one table (VB's E-step).

    Returns (counts, customers, log_z (I,)), parallel over chunks of sentences as
    `cvbayes.trees.inside_outside.batch_inside_outside`.
    """
    n_chunks = chunk_bounds.shape[0] - 1
    n_sentences = offsets.shape[0] - 1
    counts_acc = np.zeros((n_chunks, n_rules))
    customers_acc = np.zeros((n_chunks, n_rules))
    log_z = np.empty(n_sentences)
    for c in prange(n_chunks):
        buffers, marginals, outer = chunk_workspace(kernel, offsets, chunk_bounds[c], chunk_bounds[c + 1])
        for i in range(chunk_bounds[c], chunk_bounds[c + 1]):
            sentence = tokens[offsets[i]:offsets[i + 1]]
            spans = span_ids[span_offsets[i]:span_offsets[i + 1]]
            log_z[i] = sentence_expectations(kernel, tables, sentence, spans, buffers, outer, marginals,
                                             adapted_symbol, counts_acc[c], customers_acc[c])
    return counts_acc.sum(axis=0), customers_acc.sum(axis=0), log_z


@parallel_over_chunks()
def cell_expectations(kernel, tables, tokens, offsets, span_ids, span_offsets, chunk_bounds, cell_offsets,
                      cell_rules, n_rules, adapted_symbol):
    """Each sentence's expected rule counts and customers at its cells, and its log Z (CVI's table charts).

    Returns (counts, customers) aligned with ``cell_rules`` (`cvbayes.trees.cells.sentence_cells`)
    and log_z (I,), so that the caller can weight every sentence by its own factor (a weighted batch
    inside-outside: the counts of sentence i times w_i).  Parallel over chunks of sentences.
    """
    n_chunks = chunk_bounds.shape[0] - 1
    n_sentences = offsets.shape[0] - 1
    out_counts = np.zeros(cell_rules.shape[0])
    out_customers = np.zeros(cell_rules.shape[0])
    log_z = np.empty(n_sentences)
    for c in prange(n_chunks):
        buffers, marginals, outer = chunk_workspace(kernel, offsets, chunk_bounds[c], chunk_bounds[c + 1])
        scratch_counts = np.zeros(n_rules)
        scratch_customers = np.zeros(n_rules)
        for i in range(chunk_bounds[c], chunk_bounds[c + 1]):
            sentence = tokens[offsets[i]:offsets[i + 1]]
            spans = span_ids[span_offsets[i]:span_offsets[i + 1]]
            log_z[i] = sentence_expectations(kernel, tables, sentence, spans, buffers, outer, marginals,
                                             adapted_symbol, scratch_counts, scratch_customers)
            for cell in range(cell_offsets[i], cell_offsets[i + 1]):
                rule = cell_rules[cell]
                out_counts[cell] = scratch_counts[rule]
                out_customers[cell] = scratch_customers[rule]
                scratch_counts[rule] = 0.0
                scratch_customers[rule] = 0.0
    return out_counts, out_customers, log_z


@njit(cache=True)
def substring_occurrences(offsets, span_ids, span_offsets, n_substrings):
    """(unit, begin) (2, S) of one occurrence of every substring id among the sentences (-1: none)."""
    out = np.full((2, n_substrings), -1, dtype=np.int64)
    for i in range(offsets.shape[0] - 1):
        n_tokens = offsets[i + 1] - offsets[i]
        spans = span_ids[span_offsets[i]:span_offsets[i + 1]]
        for begin in range(n_tokens):
            for end in range(begin + 1, n_tokens + 1):
                substring = spans[begin * (n_tokens + 1) + end]
                if substring >= 0 and out[0, substring] < 0:
                    out[0, substring] = i
                    out[1, substring] = begin
    return out


@njit(cache=True)
def substring_batch(tokens, offsets, span_ids, span_offsets, occurrences, lengths, chosen):
    """The substrings ``chosen`` as sentences (tokens, offsets, span ids, span offsets of a SentenceBatch),
    cut from an occurrence in the sentences: a substring's span (j, l) has the id of its sentence's span
    (begin + j, begin + l), so no substring is looked up again."""
    n = chosen.shape[0]
    out_offsets = np.zeros(n + 1, dtype=np.int64)
    out_span_offsets = np.zeros(n + 1, dtype=np.int64)
    for k in range(n):
        length = lengths[chosen[k]]
        out_offsets[k + 1] = out_offsets[k] + length
        out_span_offsets[k + 1] = out_span_offsets[k] + (length + 1) * (length + 1)
    out_tokens = np.empty(out_offsets[n], dtype=np.int32)
    out_spans = np.full(out_span_offsets[n], -1, dtype=np.int64)
    for k in range(n):
        unit, begin, length = occurrences[0, chosen[k]], occurrences[1, chosen[k]], lengths[chosen[k]]
        width = offsets[unit + 1] - offsets[unit] + 1
        source = span_ids[span_offsets[unit]:span_offsets[unit + 1]]
        for j in range(length):
            out_tokens[out_offsets[k] + j] = tokens[offsets[unit] + begin + j]
            for l in range(j + 1, length + 1):
                out_spans[out_span_offsets[k] + j * (length + 1) + l] = source[(begin + j) * width + begin + l]
    return out_tokens, out_offsets, out_spans, out_span_offsets


@njit(cache=True)
def seat_cells(model, cells):
    """E[t_s] (`yield_tables`) of the yields ``cells`` of one adapted nonterminal; returns their sum."""
    total = 0.0
    for rule in cells:
        model.tables[rule] = yield_tables(model, rule)
        total += model.tables[rule]
    return total


@njit(cache=True)
def vb_table(counts, row_totals, rule_parent, alpha, row_prior, cache_of, adapted_of, log_stick, log_rest,
             out):
    """VB's weights (Cohen, Blei and Smith 2010): exp E[log theta] (eq. 4.12) times the base mass
    exp(log_rest[X]) for base rules, exp E[log pi_k] = exp(log_stick[r]) for cache rules."""
    for r in range(counts.shape[0]):
        x = cache_of[r]
        if x >= 0:
            out[r] = math.exp(log_stick[r]) if log_stick[r] > -np.inf else 0.0
            continue
        parent = rule_parent[r]
        log_weight = log_geometric_cell(counts[r], alpha, row_totals[parent], row_prior[parent])
        owner = adapted_of[parent]
        if owner >= 0:
            log_weight += log_rest[owner]
        out[r] = math.exp(log_weight)


# ------------------------------------------------------------------ CVI
@njit(cache=True, inline="always")
def cache_mass(predictive, free, log_empty, theta, customers, variance):
    """The leave-one-out predictive mass of adapted X's cache at yield s (without its normaliser n + b) for
    the ZERO_EXACT and SECOND_ORDER predictives (FIRST_ORDER's is max(n_s - a t_s, 0), the Pitman-Yor
    predictive of the expected counts and the sampler's): what the chart's ``X -> s`` rule carries beside
    the base path, whose mass is theta'_s / (n + b) with theta'_s = (b + a T) H_X(s) (module notes of
    `cvbayes.models.adaptor`).  ``free`` is n_s - a t_s, ``log_empty`` log q(n_s = 0).

    ZERO_EXACT: exp E[log(n_s - a t_s + theta'_s)] - theta'_s with the case n_s = 0 (then t_s = 0) exact
    and the first-order value on n_s > 0: theta'^q0 (E_+[n_s - a t_s] + theta')^q+ - theta', q0 = q(n_s =
    0), q+ = 1 - q0.  SECOND_ORDER: the same with -Var_+[n_s] / (2 (E_+[n_s - a t_s] + theta')^2) added to
    the log on n_s > 0 (the variance of the customers given n_s > 0; t_s's own spread ignored).
    """
    occupied = -math.expm1(min(log_empty, 0.0))
    if free <= 0.0 or occupied <= 0.0:
        return 0.0
    positive = free / occupied + theta
    log_positive = math.log(positive)
    if predictive == SECOND_ORDER:
        spread = (variance + customers * customers) / occupied - (customers / occupied) ** 2
        log_positive -= min(max(spread, 0.0) / (2.0 * positive * positive), 1.0)
    if theta <= 0.0:
        return math.exp(log_positive) if occupied >= 1.0 else 0.0
    gain = occupied * (log_positive - math.log(theta))
    if gain > 30.0:      # theta' is below the first term's last digit
        return math.exp(occupied * log_positive + (1.0 - occupied) * math.log(theta))
    return theta * math.expm1(gain)


@njit(cache=True)
def predictive_weights(model, rules, first, last, power, out):
    """out[r] = the leave-one-out predictive weight of each rule r of rules[first:last] (CVI; the MCMC
    proposal), to the power ``power``; returns ``out``.

    Base rule of A: MEAN (eq. 4.24) of its Dirichlet row, times (b + a T) / (n + b) when A is adapted;
    cache rule of X at yield s: `cache_mass` / (n + b) (the Pitman-Yor predictive).  The state's arrays are
    read into locals once: a call a rule with the whole state costs more than the rule's arithmetic, as
    numba counts references to every array it passes.
    """
    predictive, alpha = model.predictive[0], model.alpha
    counts, row_totals, row_prior, rule_parent = model.counts, model.row_totals, model.row_prior, model.rule_parent
    cache_of, adapted_of, customers, tables = model.cache_of, model.adapted_of, model.customers, model.tables
    total_customers, total_tables = model.total_customers, model.total_tables
    discount, concentration = model.discount, model.concentration
    log_empty, base_mass, variance = model.log_empty, model.base_mass, model.variance
    for c in range(first, last):
        rule = rules[c]
        x = cache_of[rule]
        if x >= 0:
            a = discount[x]
            free = customers[rule] - a * tables[rule]
            if predictive == FIRST_ORDER:
                mass = max(free, 0.0)
            else:
                theta = (concentration[x] + a * max(total_tables[x], 0.0)) * base_mass[rule]
                mass = cache_mass(predictive, free, log_empty[rule], theta, customers[rule], variance[rule])
            weight = mass / (max(total_customers[x], 0.0) + concentration[x])
        else:
            parent = rule_parent[rule]
            weight = mean_cell(counts[rule], alpha, row_totals[parent], row_prior[parent])
            owner = adapted_of[parent]
            if owner >= 0:
                n = max(total_customers[owner], 0.0)
                weight *= (concentration[owner] + discount[owner] * max(total_tables[owner], 0.0)) / (
                    n + concentration[owner])
        out[rule] = weight if power == 1.0 else weight ** power
    return out


# q(n^m_s = 0) is floored here so that an utterance certain to use yield s can still be taken out
EMPTY_FLOOR = 1e-12


@njit(cache=True)
def yield_tables(model, rule):
    """E[t_s] of yield s of X: `py_expected_tables` of theta'_s = (b + a T_X) H_X(s) with T_X the reference
    (T at the last refresh), E[n_s] and q(n_s > 0) (thesis eq. 5.35 at a = 0), the yield's customers spread over
    X's n_X (at the last refresh) as its tables grew to T_X."""
    x = model.cache_of[rule]
    a, b, reference = model.discount[x], model.concentration[x], model.reference_tables[x]
    theta = (b + a * reference) * model.base_mass[rule]
    occupied = -math.expm1(min(model.log_empty[rule], 0.0))
    return py_expected_tables(theta, model.customers[rule], occupied, a, b, reference,
                              model.reference_customers[x])


@njit(cache=True, inline="always")
def nested_share(tables, log_empty, m):
    """What one yield c's tables (E[t_c], log q(n_c = 0)) give a nested Y at yield s with m = m_{c,s}:
    customers E[t_c] m, log q(none from c) and variance E[t_c] p (1 - p), p = min(m, 1)
    (`cvbayes.models.adaptor.cvi.nested_statistics`, one term of its sums)."""
    p = min(m, 1.0)
    empty = math.exp(min(log_empty, 0.0))
    occupied = 1.0 - empty
    per_table = tables / occupied if occupied > 0.0 else 0.0
    none = empty + occupied * (1.0 - p) ** per_table
    log_none = math.log(none) if none > 0.0 else -np.inf
    return tables * m, max(log_none, math.log(EMPTY_FLOOR)), tables * p * (1.0 - p)


@njit(cache=True)
def move_nested(model, nested, rule, old_tables, old_log_empty):
    """Yield c (``rule``) of adapted X went from (old_tables, old_log_empty) to its current tables: the
    nested Y-yields s of c's tables (`NestedShares`) take the difference of c's share (`nested_share`); their
    tables follow in `move_sentence`, once a move.  So a unit taken out takes its own part of Y's statistics
    with it (through X's tables at the yields it uses), and puts its new part back."""
    for e in range(nested.offsets[rule], nested.offsets[rule + 1]):
        child, m = nested.rules[e], nested.expected[e]
        y = model.cache_of[child]
        old_customers, old_none, old_variance = nested_share(old_tables, old_log_empty, m)
        new_customers, new_none, new_variance = nested_share(model.tables[rule], model.log_empty[rule], m)
        model.customers[child] += new_customers - old_customers
        model.total_customers[y] += new_customers - old_customers
        model.log_empty[child] += new_none - old_none
        model.variance[child] += new_variance - old_variance


@njit(cache=True)
def move_sentence(model, nested, cell_rules, first, last, local_counts, local_customers, sign):
    """Add (sign +w) or take out (-w) one unit's expected customers and top-level rule counts (w: the
    utterances it stands for).

    At a cache cell of a counted adapted X the customers n_s, log q(n_s = 0) = sum_m log q(n^m_s = 0)
    and the variance sum_m q(n^m_s > 0) q(n^m_s = 0) move, with q(n^m_s > 0) = min(n^m_s, 1) (exact when
    an utterance has at most one X-node over s in any parse), and the tables follow (`yield_tables`).  Base
    rules move only when outside every adapted subtree (``top_rule``); the others are counted from the
    tables (`cvbayes.models.adaptor.cvi.CollapsedVariational.refresh_tables`); the nested adapted yields
    below X's yields follow X's tables (`move_nested`), and their tables once all moved: the nested yields of
    the unit's X-yields are its substrings, so among its cells.
    """
    counts, row_totals, rule_parent, cache_of = model.counts, model.row_totals, model.rule_parent, model.cache_of
    followed = False
    for c in range(first, last):
        rule = cell_rules[c]
        x = cache_of[rule]
        if x >= 0:
            served = local_customers[c]
            if served == 0.0:
                continue
            occupied = min(served, 1.0)
            old_tables, old_log_empty = model.tables[rule], model.log_empty[rule]
            model.customers[rule] += sign * served
            model.total_customers[x] += sign * served
            model.log_empty[rule] += sign * math.log(max(1.0 - occupied, EMPTY_FLOOR))
            model.variance[rule] += sign * occupied * (1.0 - occupied)
            new_tables = yield_tables(model, rule)
            model.total_tables[x] += new_tables - model.tables[rule]
            model.tables[rule] = new_tables
            if nested.offsets[rule + 1] > nested.offsets[rule]:
                move_nested(model, nested, rule, old_tables, old_log_empty)
                followed = True
        elif model.top_rule[rule]:
            counts[rule] += sign * local_counts[c]
            row_totals[rule_parent[rule]] += sign * local_counts[c]
    if followed:
        for c in range(first, last):
            rule = cell_rules[c]
            y = cache_of[rule]
            if y >= 0 and nested.followers[y]:
                new_tables = yield_tables(model, rule)
                model.total_tables[y] += new_tables - model.tables[rule]
                model.tables[rule] = new_tables


@njit(cache=True)
def _predictive_tables(state, i):
    """Take sentence i's statistics out and build the rule tables of the leave-one-out predictive weights of
    the rules it can use (`predictive_weights`)."""
    sentences, model, local = state.sentences, state.model, state.local
    cell_rules = sentences.cell_rules
    first, last = sentences.cell_offsets[i], sentences.cell_offsets[i + 1]
    move_sentence(model, state.nested, cell_rules, first, last, local.counts, local.customers, -sentences.weight[i])
    return build_tables(sentences.kernel, fill_predictive_table(model, cell_rules, first, last))


@njit(cache=True)
def _put_back(state, i, found):
    """Copy the scratch statistics of sentence i into its local statistics (when ``found``; else its old ones
    stay), clear the scratch and add the sentence back."""
    sentences, local, work = state.sentences, state.local, state.work
    cell_rules = sentences.cell_rules
    local_counts, local_customers = local.counts, local.customers
    scratch_counts, scratch_customers = work.scratch_counts, work.scratch_customers
    first, last = sentences.cell_offsets[i], sentences.cell_offsets[i + 1]
    for c in range(first, last):
        rule = cell_rules[c]
        if found:
            local_counts[c] = scratch_counts[rule]
            local_customers[c] = scratch_customers[rule]
        scratch_counts[rule] = 0.0
        scratch_customers[rule] = 0.0
    move_sentence(state.model, state.nested, cell_rules, first, last, local_counts, local_customers,
                  sentences.weight[i])


@njit(cache=True)
def _sentence(sentences, i):
    """Sentence i's tokens and span ids."""
    tokens = sentences.tokens[sentences.offsets[i]:sentences.offsets[i + 1]]
    return tokens, sentences.span_ids[sentences.span_offsets[i]:sentences.span_offsets[i + 1]]


@njit(cache=True)
def update_sentence(state, i):
    """CVI on unit i: take its expected statistics out, run inside-outside on the leave-one-out
    predictive weights of the rules it can use (`predictive_weights`), put the new statistics back.

    Returns w log Z, log Z the unit's predictive log-probability under those weights, w the utterances it
    stands for (-inf: no tree, its statistics restored).
    """
    sentences, work = state.sentences, state.work
    tables = _predictive_tables(state, i)
    tokens, spans = _sentence(sentences, i)
    log_z = sentence_expectations(sentences.kernel, tables, tokens, spans, work.buffers, work.binary_outer,
                                  work.marginals, state.model.counted_symbol, work.scratch_counts,
                                  work.scratch_customers)
    _put_back(state, i, log_z > -np.inf)
    return sentences.weight[i] * log_z


@njit(cache=True)
def tree_statistics(kernel, rows, n_rows, spans, n_tokens, adapted_symbol, counts, customers):
    """Add the rule counts and customers of one tree (kernel rows in preorder, `sentence_sample`) to
    ``counts`` and ``customers`` (R,): the indicator statistics `sentence_expectations` would give if the
    sentence had this tree only.  Rows of binarisation rules (rule < 0) count nothing."""
    width = n_tokens + 1
    for row in range(n_rows):
        kind, index, begin, middle, end = rows[row, 0], rows[row, 1], rows[row, 2], rows[row, 3], rows[row, 4]
        if kind == BINARY:
            rule, parent = kernel.binary_rule[index], kernel.binary_parent[index]
        elif kind == UNARY:
            rule, parent = kernel.unary_rule[index], kernel.unary_parent[index]
        elif kind == LEXICAL:
            rule, parent = kernel.lexical_rule[index], kernel.lexical_parent[index]
        else:
            rule, parent = kernel.span_base[index] + middle, kernel.span_parent[index]
        if rule >= 0:
            counts[rule] += 1.0
        for x in range(adapted_symbol.shape[0]):
            if adapted_symbol[x] != parent:
                continue
            for f in range(kernel.span_parent.shape[0]):
                if kernel.span_parent[f] == parent:
                    customers[kernel.span_base[f] + spans[begin * width + end]] += 1.0


@njit(cache=True)
def start_sentence(state, i, seed, rows):
    """CVI's sampled start for sentence i (the MCMC's initial state, `cvbayes.models.adaptor.sampler.Sampler.initialise`):
    a tree drawn from the predictive weights of the sentences added before it, its indicator statistics
    as the sentence's local statistics.  Returns the tree's log weight (-inf: no tree)."""
    sentences, work = state.sentences, state.work
    tables = _predictive_tables(state, i)
    tokens, spans = _sentence(sentences, i)
    log_weight, n_rows = sentence_sample(sentences.kernel, tables, tokens, spans, work.buffers, seed, rows)
    found = n_rows > 0
    if found:
        tree_statistics(sentences.kernel, rows, n_rows, spans, tokens.shape[0], state.model.counted_symbol,
                        work.scratch_counts, work.scratch_customers)
    _put_back(state, i, found)
    return log_weight if found else -np.inf


@njit(cache=True)
def start_pass(state, order, seed):
    """`start_sentence` on the sentences in ``order`` (all local statistics zero before): returns the
    first sentence without a tree (-1 if none)."""
    kernel, offsets = state.sentences.kernel, state.sentences.offsets
    longest = 1
    for i in range(offsets.shape[0] - 1):
        longest = max(longest, offsets[i + 1] - offsets[i])
    rows = np.empty(((2 * longest - 1) * (kernel.n_symbols + 1) * 8, 5), dtype=np.int64)
    for step in range(order.shape[0]):
        if start_sentence(state, order[step], seed + step, rows) == -np.inf:
            return order[step]
    return -1


@njit(cache=True)
def cvi_pass(state, order):
    """One CVI pass over the sentences in ``order`` (schedules.leave_one_out): (objective, first bad)."""
    return leave_one_out(update_sentence, state, order)


@njit(cache=True)
def all_predictive_weights(model, n_rules):
    """`predictive_weights` of every global rule: the posterior predictive table of the final counts."""
    return predictive_weights(model, np.arange(n_rules), 0, n_rules, 1.0, np.empty(n_rules))


@njit(cache=True)
def fill_predictive_table(model, cell_rules, first, last, power=1.0):
    """table[r] = `predictive_weights` of the rules cell_rules[first:last] (a sentence's cells), to the power
    ``power``: the weights of the MCMC proposal (annealed when ``power`` < 1), the PCFG approximation of
    the current state (Johnson et al. 2007)."""
    return predictive_weights(model, cell_rules, first, last, power, model.table)
