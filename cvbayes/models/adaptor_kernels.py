"""The adaptor grammar's numba bindings: its rule tables and its units for the schedules of `cvbayes.schedules`.

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
  tables t_s a function of the customers n_s (thesis eq. 5.35, `expected_table_count`).

Rule layout
-----------
``cache_of`` (R,) int32: the adapted nonterminal (0 .. M-1) whose cache family a global rule belongs
to, -1 for a base rule (a Dirichlet cell of its parent's row, ``rule_parent``).  ``adapted_of``
(n_nonterminals,) int32: a nonterminal's adapted index or -1; ``adapted_symbol`` (M,) its kernel symbol.

CVI state (plain tuples, built by the model)
--------------------------------------------
``sentences`` = (kernel, tokens, offsets, span_ids, span_offsets, cell_offsets, cell_rules), as the
PCFG's (`cvbayes.models.pcfg_kernels`): the global rules a sentence can use are its cells.

``model`` = (counts (R,) base-rule counts, row_totals (n_nonterminals,) over base rules only,
rule_parent (R,), alpha, row_prior (n_nonterminals,) = |base rules of A| alpha, cache_of (R,),
adapted_of, counted_symbol (the kernel symbols of the *top* adapted nonterminals, whose customers
the utterances' charts count), customers (R,) and tables (R,) at cache cells, total_customers (M,),
total_tables (M,), discount (M,), concentration (M,), table (R,) the work table, top_rule (R,) bool
(a base rule outside every adapted subtree, counted from the utterances), theta (R,) b H_X(s) at
cache cells, log_empty (R,) at cache cells sum_m log q(n^m_s = 0)).  The first fifteen are the MCMC
proposal's state too (`mean_weight`, `fill_mean_table` read no more).

``local`` = (local_counts, local_customers), float64 aligned with ``cell_rules``: a sentence's expected
rule counts (cache cells: its expected cache uses) and, at cache cells of top adapted nonterminals,
its expected customers.

``work`` = (scratch_counts (R,), scratch_customers (R,) zeros, binary_outer, buffers, marginals).
"""
import math

import numpy as np
from numba import njit, prange
from scipy.special import gammaln

from ..core.rules import log_geometric_cell, mean_cell
from ..core.special import digamma
from ..schedules import leave_one_out
from ..trees.grammar import BINARY, LEXICAL, UNARY
from ..trees.inside_outside import (add_binary_counts, build_tables, chart_buffers, sentence_inside_outside,
                                    sentence_sample)


def log_rising(b, a, tables):
    """log prod_{i=1}^{T-1} (b + i a) for real T = ``tables`` >= 1 (the table factor of the Pitman-Yor
    exchangeable partition probability): (T - 1) log a + log Gamma(z + T) - log Gamma(z + 1), z = b / a,
    and (T - 1) log b at a = 0.  For large z (small a) the Gamma functions' difference loses every digit,
    so it is taken from Stirling's series, (T - 1) log(b + a) + (z + T - 1/2) log1p((T - 1) / (z + 1))
    - (T - 1) + 1/(12 (z + T)) - 1/(12 (z + 1)), whose error is below 1/(360 z^3) per Gamma function."""
    steps = tables - 1.0
    if a <= 0.0:
        return steps * math.log(b)
    z = b / a
    if z < 1e4:
        return steps * math.log(a) + gammaln(z + tables) - gammaln(z + 1.0)
    return (steps * math.log(b + a) + (z + tables - 0.5) * math.log1p(steps / (z + 1.0)) - steps
            + 1.0 / (12.0 * (z + tables)) - 1.0 / (12.0 * (z + 1.0)))


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
    if kernel.dense:
        binary_outer[:, :] = 0.0
    log_z = sentence_inside_outside(kernel, tables, tokens, spans, buffers, counts, binary_outer, marginals)
    if log_z == -np.inf:
        return log_z
    add_binary_counts(kernel, tables, binary_outer, counts)
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


@njit(parallel=True, cache=True)
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


@njit(parallel=True, cache=True)
def cell_expectations(kernel, tables, tokens, offsets, span_ids, span_offsets, chunk_bounds, cell_offsets,
                      cell_rules, n_rules, adapted_symbol):
    """Each sentence's expected rule counts and customers at its cells, and its log Z (CVI's table charts).

    Returns (counts, customers) aligned with ``cell_rules`` (`cvbayes.models.pcfg_kernels.sentence_cells`)
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
@njit(cache=True)
def mean_weight(model, rule):
    """The leave-one-out predictive weight of one global rule (CVI; the MCMC proposal).

    Base rule of A: MEAN (eq. 4.24) of its Dirichlet row, times (b + a T) / (n + b) when A is adapted;
    cache rule of X at yield s: max(n_s - a t_s, 0) / (n + b) (the Pitman-Yor predictive).
    """
    counts, row_totals, rule_parent, alpha, row_prior, cache_of, adapted_of = model[:7]
    customers, tables, total_customers, total_tables, discount, concentration = model[8:14]
    x = cache_of[rule]
    if x >= 0:
        free = customers[rule] - discount[x] * tables[rule]
        return max(free, 0.0) / (max(total_customers[x], 0.0) + concentration[x])
    parent = rule_parent[rule]
    weight = mean_cell(counts[rule], alpha, row_totals[parent], row_prior[parent])
    owner = adapted_of[parent]
    if owner >= 0:
        n = max(total_customers[owner], 0.0)
        weight *= (concentration[owner] + discount[owner] * max(total_tables[owner], 0.0)) / (
            n + concentration[owner])
    return weight


# q(n^m_s = 0) is floored here so that an utterance certain to use yield s can still be taken out
EMPTY_FLOOR = 1e-12


@njit(cache=True)
def expected_table_count(theta, customers, occupied):
    """E[t_s] = theta q(n_s > 0) (psi(theta + E_+[n_s]) - psi(theta)), E_+[n_s] = n_s / q(n_s > 0)
    (thesis eq. 5.29-5.35 with sigma G[pi_k] -> theta_s = b H_X(s); 0 without customers or base mass).

    Scalar numba twin of `cvbayes.models.hdp.expected_tables` (which the tests check it against).
    """
    if occupied <= 0.0 or customers <= 0.0 or theta <= 0.0:
        return 0.0
    return theta * occupied * (digamma(theta + customers / occupied) - digamma(theta))


@njit(cache=True)
def move_sentence(model, cell_rules, first, last, local_counts, local_customers, sign):
    """Add (sign +1) or take out (-1) one sentence's expected customers and top-level rule counts.

    At a cache cell of a top adapted X the customers n_s and log q(n_s = 0) = sum_m log q(n^m_s = 0)
    move, with q(n^m_s = 0) = 1 - min(n^m_s, 1) (exact when an utterance has at most one X-node over
    s in any parse), and the tables follow: t_s = `expected_table_count` (theta_s, n_s, q(n_s > 0)),
    T_X = sum_s t_s.  Base rules move only when outside every adapted subtree (``top_rule``); the
    others are counted from the tables (`AdaptorGrammar._refresh_tables`).
    """
    counts, row_totals, rule_parent = model[0], model[1], model[2]
    cache_of = model[5]
    customers, tables, total_customers, total_tables = model[8], model[9], model[10], model[11]
    top_rule, theta, log_empty = model[15], model[16], model[17]
    for c in range(first, last):
        rule = cell_rules[c]
        x = cache_of[rule]
        if x >= 0:
            served = local_customers[c]
            if served == 0.0:
                continue
            customers[rule] += sign * served
            total_customers[x] += sign * served
            log_empty[rule] += sign * math.log(max(1.0 - min(served, 1.0), EMPTY_FLOOR))
            occupied = -math.expm1(min(log_empty[rule], 0.0))
            new_tables = expected_table_count(theta[rule], customers[rule], occupied)
            total_tables[x] += new_tables - tables[rule]
            tables[rule] = new_tables
        elif top_rule[rule]:
            counts[rule] += sign * local_counts[c]
            row_totals[rule_parent[rule]] += sign * local_counts[c]


@njit(cache=True)
def _predictive_tables(state, i):
    """Take sentence i's statistics out and build the rule tables of the leave-one-out predictive weights of
    the rules it can use (`mean_weight`)."""
    sentences, model, local, _ = state
    kernel, cell_offsets, cell_rules = sentences[0], sentences[5], sentences[6]
    table = model[14]
    first, last = cell_offsets[i], cell_offsets[i + 1]
    move_sentence(model, cell_rules, first, last, local[0], local[1], -1.0)
    for c in range(first, last):
        table[cell_rules[c]] = mean_weight(model, cell_rules[c])
    return build_tables(kernel, table)


@njit(cache=True)
def _put_back(state, i, found):
    """Copy the scratch statistics of sentence i into its local statistics (when ``found``; else its old ones
    stay), clear the scratch and add the sentence back."""
    sentences, model, local, work = state
    cell_offsets, cell_rules = sentences[5], sentences[6]
    local_counts, local_customers = local
    scratch_counts, scratch_customers = work[0], work[1]
    first, last = cell_offsets[i], cell_offsets[i + 1]
    for c in range(first, last):
        rule = cell_rules[c]
        if found:
            local_counts[c] = scratch_counts[rule]
            local_customers[c] = scratch_customers[rule]
        scratch_counts[rule] = 0.0
        scratch_customers[rule] = 0.0
    move_sentence(model, cell_rules, first, last, local_counts, local_customers, 1.0)


@njit(cache=True)
def update_sentence(state, i):
    """CVI on sentence i: take its expected statistics out, run inside-outside on the leave-one-out
    predictive weights of the rules it can use (`mean_weight`), put the new statistics back.

    Returns log Z, the sentence's predictive log-probability under those weights (-inf: no tree, its
    statistics restored).
    """
    sentences, model, _, work = state
    kernel, tokens_all, offsets, span_ids, span_offsets = sentences[:5]
    scratch_counts, scratch_customers, binary_outer, buffers, marginals = work
    tables = _predictive_tables(state, i)
    tokens = tokens_all[offsets[i]:offsets[i + 1]]
    spans = span_ids[span_offsets[i]:span_offsets[i + 1]]
    log_z = sentence_expectations(kernel, tables, tokens, spans, buffers, binary_outer, marginals,
                                  model[7], scratch_counts, scratch_customers)
    _put_back(state, i, log_z > -np.inf)
    return log_z


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
    """CVI's sampled start for sentence i (the MCMC's initial state, `adaptor_mcmc.Sampler.initialise`):
    a tree drawn from the predictive weights of the sentences added before it, its indicator statistics
    as the sentence's local statistics.  Returns the tree's log weight (-inf: no tree)."""
    sentences, model, _, work = state
    kernel, tokens_all, offsets, span_ids, span_offsets = sentences[:5]
    scratch_counts, scratch_customers, buffers = work[0], work[1], work[3]
    tables = _predictive_tables(state, i)
    tokens = tokens_all[offsets[i]:offsets[i + 1]]
    spans = span_ids[span_offsets[i]:span_offsets[i + 1]]
    log_weight, n_rows = sentence_sample(kernel, tables, tokens, spans, buffers, seed, rows)
    found = n_rows > 0
    if found:
        tree_statistics(kernel, rows, n_rows, spans, tokens.shape[0], model[7], scratch_counts, scratch_customers)
    _put_back(state, i, found)
    return log_weight if found else -np.inf


@njit(cache=True)
def start_pass(state, order, seed):
    """`start_sentence` on the sentences in ``order`` (all local statistics zero before): returns the
    first sentence without a tree (-1 if none)."""
    kernel = state[0][0]
    offsets = state[0][2]
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
def all_mean_weights(model, n_rules):
    """`mean_weight` of every global rule: the posterior predictive table of the final counts."""
    out = np.empty(n_rules)
    for r in range(n_rules):
        out[r] = mean_weight(model, r)
    return out



@njit(cache=True)
def fill_mean_table(model, cell_rules, first, last):
    """table[r] = `mean_weight` of the rules cell_rules[first:last] (a sentence's cells): the weights of
    the MCMC proposal, the PCFG approximation of the current state (Johnson et al. 2007)."""
    table = model[14]
    for c in range(first, last):
        table[cell_rules[c]] = mean_weight(model, cell_rules[c])
    return table
