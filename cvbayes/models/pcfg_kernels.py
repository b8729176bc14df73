"""The PCFG's numba bindings to the schedules of `cvbayes.schedules` (thesis ch. 4).

Each binding is the PCFG's part of one schedule; the schedule owns the loop, the tree kernels of
`cvbayes.trees.inside_outside` own the dynamic programs:

* `update_tree`: CVI's unit update (schedules.leave_one_out, eq. 4.17-4.24): the unit is a sentence,
  its local statistics the expected rule counts of its tree;
* `resample_tree`: the collapsed, blocked Metropolis-Hastings step of Johnson, Griffiths and Goldwater
  (2007) (schedules.gibbs, eq. 4.13-4.16): propose a tree from theta^H, accept by eq. 4.14;
* `local_expected_counts` and `start_trees`: the collapsed algorithms' starting local statistics.

Every rule weight comes from `cvbayes.core.rules.mean_cell` (the MEAN rule on the counts of every
other sentence), and the exact target of eq. 4.14 is the same cell applied as a Polya urn (eq. 4.22):
no Dirichlet formula is written here.

The rules a sentence can use are its *cells* (`cvbayes.trees.cells`); its local statistics are float32
values on them, moved in and out of the global counts with `cvbayes.core.statistics.move_slots` (the
slots are the global rules, their rows the parents).  So CVI's memory is 8 bytes a cell: O(T^2) a
sentence for span grammars, O(N^3 + T N) for full CNF grammars.

States (plain tuples, built by the model)
-----------------------------------------
``sentences`` = (kernel, tokens, offsets, span_ids, span_offsets, cell_offsets, cell_rules): the
corpus as the tree kernels read it (a `SentenceBatch`) and its cells.

``rows`` = (counts (R,), row_totals (n_nonterminals,), rule_parent (R,), alpha, row_prior
(n_nonterminals,) = |R_A| alpha, shared_rules (every binary and unary global rule), table (R,)): the
global counts and the work table the surrogate weights are written to (only at the rules the
sentence reads, so a step costs O(cells), not O(R)).

CVI: (sentences, rows, local (float32, aligned with cell_rules), scratch (R,) zeros, binary_outer
((N, N*N) or (0, 0)), buffers (`chart_buffers`), no_marginals (0, 0, 0)).

MH: (sentences, rows, tree_offsets (I + 1,), tree_rules (the current tree of every sentence as global
rule ids in preorder, at most tree_offsets[i + 1] - tree_offsets[i] of them), tree_sizes (I,),
proposal (rows, 5) work rows, buffers, tally (int64 [accepted, proposed, moved]: moved counts the
accepted proposals that differ from the current tree, since a proposal equal to it is always accepted)).
"""
import math

import numpy as np
from numba import njit, prange

from ..core.rules import mean_cell
from ..core.statistics import move_slots
from ..core.units import parallel_over_chunks
from ..schedules import gibbs, leave_one_out
from ..trees.inside_outside import (build_tables, chart_buffers, derivation_rule_ids, sentence_rule_counts,
                                    sentence_sample)


# ------------------------------------------------------------------ surrogate tables
@njit(cache=True)
def _fill_mean(rows, rules, first, last, power):
    """table[r] = MEAN(r)^power for the rules rules[first:last] (eq. 4.16, 4.24)."""
    counts, row_totals, rule_parent, alpha, row_prior, _, table = rows
    for c in range(first, last):
        rule = rules[c]
        parent = rule_parent[rule]
        weight = mean_cell(counts[rule], alpha, row_totals[parent], row_prior[parent])
        table[rule] = weight if power == 1.0 else weight ** power


@njit(cache=True)
def sentence_tables(sentences, rows, i, power):
    """The kernel tables of sentence i under MEAN^power of the current counts, written only where the
    sentence reads them (every binary and unary rule, its cells)."""
    kernel = sentences[0]
    cell_offsets, cell_rules = sentences[5], sentences[6]
    shared = rows[5]
    _fill_mean(rows, shared, 0, shared.shape[0], power)
    _fill_mean(rows, cell_rules, cell_offsets[i], cell_offsets[i + 1], power)
    return build_tables(kernel, rows[6])


@njit(cache=True)
def _sentence(sentences, i):
    """(tokens, span_ids) of sentence i."""
    _, tokens, offsets, span_ids, span_offsets, _, _ = sentences
    has_spans = span_offsets.shape[0] == offsets.shape[0] and span_ids.shape[0] > 0
    spans = span_ids[span_offsets[i]:span_offsets[i + 1]] if has_spans else span_ids[0:0]
    return tokens[offsets[i]:offsets[i + 1]], spans


# ------------------------------------------------------------------ CVI (eq. 4.17-4.24)
@njit(cache=True)
def _expected_cells(kernel, tables, tokens, spans, buffers, scratch, binary_outer, no_marginals, cell_rules,
                    first, last, local):
    """Inside-outside on one sentence; its expected counts at its cells go to local[first:last]
    (float32) and `scratch` is left zero.  Returns log Z (-inf: no tree, local untouched)."""
    log_z = sentence_rule_counts(kernel, tables, tokens, spans, buffers, scratch, binary_outer, no_marginals)
    if log_z == -np.inf:
        return log_z
    for c in range(first, last):
        rule = cell_rules[c]
        local[c] = scratch[rule]
        scratch[rule] = 0.0
    return log_z


@njit(cache=True)
def update_tree(state, i):
    """CVI on sentence i (eq. 4.24); returns its log normaliser.

    Take the sentence's expected rule counts out of the global counts (C^{\\i}), write the MEAN
    (surrogate) weights theta_bar = (E[C^{\\i}_r] + alpha) / (E[C^{\\i}_A.] + |R_A| alpha) of the rules
    it can use, run inside-outside on them (eq. 4.8-4.9), and put the new expected counts back (float32,
    the values stored are the values added).  log Z is the leave-one-sentence-out predictive
    log-probability of the sentence under theta_bar; -inf (counts restored) when it has no tree.
    """
    sentences, rows, local, scratch, binary_outer, buffers, no_marginals = state
    kernel, cell_offsets, cell_rules = sentences[0], sentences[5], sentences[6]
    counts, row_totals, rule_parent = rows[0], rows[1], rows[2]
    first = cell_offsets[i]
    last = cell_offsets[i + 1]
    move_slots(counts, row_totals, cell_rules, rule_parent, first, last - first, local, -1.0)
    tables = sentence_tables(sentences, rows, i, 1.0)
    tokens, spans = _sentence(sentences, i)
    log_z = _expected_cells(kernel, tables, tokens, spans, buffers, scratch, binary_outer, no_marginals,
                            cell_rules, first, last, local)
    move_slots(counts, row_totals, cell_rules, rule_parent, first, last - first, local, 1.0)
    return log_z


@njit(cache=True, nogil=True)
def cvi_pass(state, order):
    """One CVI pass over the sentences in `order` (schedules.leave_one_out): (objective, first bad).
    Without the GIL, so that the shards of one process (`tree_shards`) run it on threads at once."""
    return leave_one_out(update_tree, state, order)


@parallel_over_chunks()
def local_expected_counts(kernel, tables, tokens, offsets, span_ids, span_offsets, cell_offsets, cell_rules,
                          chunk_bounds, n_rules, local):
    """Every sentence's expected rule counts under one table, at its cells (float32 `local`): the
    starting local statistics of CVI.  Returns log Z of every sentence (-inf: no tree)."""
    n_sentences = offsets.shape[0] - 1
    n_chunks = chunk_bounds.shape[0] - 1
    log_z = np.empty(n_sentences)
    n = kernel.n_symbols
    outer_size = n if kernel.dense else 0
    has_spans = span_offsets.shape[0] == offsets.shape[0] and span_ids.shape[0] > 0
    for c in prange(n_chunks):
        longest = 1
        for i in range(chunk_bounds[c], chunk_bounds[c + 1]):
            longest = max(longest, offsets[i + 1] - offsets[i])
        buffers = chart_buffers(kernel, longest)
        scratch = np.zeros(n_rules)
        binary_outer = np.zeros((outer_size, outer_size * outer_size))
        no_marginals = np.zeros((0, 0, 0))
        for i in range(chunk_bounds[c], chunk_bounds[c + 1]):
            spans = span_ids[span_offsets[i]:span_offsets[i + 1]] if has_spans else span_ids[0:0]
            log_z[i] = _expected_cells(kernel, tables, tokens[offsets[i]:offsets[i + 1]], spans, buffers, scratch,
                                       binary_outer, no_marginals, cell_rules, cell_offsets[i],
                                       cell_offsets[i + 1], local)
    return log_z


# ------------------------------------------------------------------ MH (eq. 4.13-4.16)
@njit(cache=True)
def _add_tree(rows, rules, sign):
    counts, row_totals, rule_parent = rows[0], rows[1], rows[2]
    for j in range(rules.shape[0]):
        counts[rules[j]] += sign
        row_totals[rule_parent[rules[j]]] += sign


@njit(cache=True)
def log_target_excess(rows, rules):
    """log p(z^i | x, z^{\\i}) - log prod_r (theta^H_r)^{C^i_r} of a tree, up to one constant.

    With the tree's counts out of ``rows``, the exact conditional of eq. 4.14 is the Polya urn of
    eq. 4.22: the tree's rules taken one at a time, each with the MEAN weight of the counts so far
    (C^{\\i} plus the tree's rules already taken), so that a rule used m times contributes
    (C + a)(C + 1 + a)...(C + m - 1 + a) over its row's rising product.  theta^H (eq. 4.16) is the same
    cell on C^{\\i} alone.  The difference is the whole MH correction: the acceptance ratio of a
    proposal t' from theta^H against the current tree t is exp(excess(t') - excess(t)).
    """
    counts, row_totals, rule_parent, alpha, row_prior = rows[0], rows[1], rows[2], rows[3], rows[4]
    proposal = 0.0
    for j in range(rules.shape[0]):
        rule = rules[j]
        parent = rule_parent[rule]
        proposal += math.log(mean_cell(counts[rule], alpha, row_totals[parent], row_prior[parent]))
    target = 0.0
    for j in range(rules.shape[0]):
        rule = rules[j]
        parent = rule_parent[rule]
        target += math.log(mean_cell(counts[rule], alpha, row_totals[parent], row_prior[parent]))
        counts[rule] += 1.0
        row_totals[parent] += 1.0
    _add_tree(rows, rules, -1.0)
    return target - proposal


@njit(cache=True)
def _same_rules(first, second):
    """Whether two trees of one sentence are the same: their rules in preorder (a leftmost derivation)
    determine the tree."""
    if first.shape[0] != second.shape[0]:
        return False
    for j in range(first.shape[0]):
        if first[j] != second[j]:
            return False
    return True


@njit(cache=True)
def resample_tree(state, i, power):
    """One Metropolis-Hastings step on sentence i (Johnson, Griffiths and Goldwater 2007).

    Take the current tree's rule counts out; propose a tree from p(z^i | x^i, theta^H) (eq. 4.15-4.16,
    theta^H the MEAN weights of the other trees' counts, raised to ``power`` = 1 / temperature) with
    the inside chart (`sentence_sample`); accept it with probability
    min(1, [pi(t') q(t) / (pi(t) q(t'))]^power), pi the exact conditional of eq. 4.14
    (`log_target_excess`); put the chosen tree's counts back.  Returns False when the sentence has no
    tree.
    """
    sentences, rows, tree_offsets, tree_rules, tree_sizes, proposal, buffers, tally = state
    kernel = sentences[0]
    start = tree_offsets[i]
    current = tree_rules[start:start + tree_sizes[i]]
    _add_tree(rows, current, -1.0)
    tables = sentence_tables(sentences, rows, i, power)
    tokens, spans = _sentence(sentences, i)
    _, n_applications = sentence_sample(kernel, tables, tokens, spans, buffers, -1, proposal)
    if n_applications == 0:
        _add_tree(rows, current, 1.0)
        return False
    if n_applications < 0:
        raise ValueError("a proposed tree has a unary chain longer than the room reserved for it")
    proposed = derivation_rule_ids(kernel, proposal, n_applications)
    if proposed.shape[0] > tree_offsets[i + 1] - start:
        raise ValueError("a proposed tree has more rules than the room reserved for it (unary chains)")
    log_accept = power * (log_target_excess(rows, proposed) - log_target_excess(rows, current))
    tally[1] += 1
    if log_accept >= 0.0 or np.random.random() < math.exp(log_accept):
        tally[0] += 1
        if not _same_rules(proposed, current):
            tally[2] += 1
        tree_rules[start:start + proposed.shape[0]] = proposed
        tree_sizes[i] = proposed.shape[0]
    _add_tree(rows, tree_rules[start:start + tree_sizes[i]], 1.0)
    return True


@njit(cache=True)
def mh_pass(state, order, power):
    """One MH sweep over the sentences in `order` (schedules.gibbs): the first sentence without a
    tree, or -1."""
    return gibbs(resample_tree, state, order, power)


@njit(cache=True)
def start_trees(sentences, tables, tree_offsets, tree_rules, tree_sizes, proposal, buffers, counts):
    """One tree a sentence drawn from one table (numba's generator), its rules stored and counted.

    Returns the first sentence without a tree, or -1.
    """
    kernel = sentences[0]
    for i in range(tree_sizes.shape[0]):
        tokens, spans = _sentence(sentences, i)
        _, n_applications = sentence_sample(kernel, tables, tokens, spans, buffers, -1, proposal)
        if n_applications <= 0:
            if n_applications < 0:
                raise ValueError("a starting tree has a unary chain longer than the room reserved for it")
            return i
        rules = derivation_rule_ids(kernel, proposal, n_applications)
        if rules.shape[0] > tree_offsets[i + 1] - tree_offsets[i]:
            raise ValueError("a starting tree has more rules than the room reserved for it (unary chains)")
        tree_rules[tree_offsets[i]:tree_offsets[i] + rules.shape[0]] = rules
        tree_sizes[i] = rules.shape[0]
        for j in range(rules.shape[0]):
            counts[rules[j]] += 1.0
    return -1
