"""The adaptor grammar's reference sampler: Johnson, Griffiths and Goldwater's (2007) Metropolis-Hastings
over utterance parses with Pitman-Yor restaurants (`cvbayes.models.adaptor`, ``fit(algorithm="mcmc")``),
its annealing schedule, and the learner that runs it (`MetropolisHastings`).

The sampler works on the model's compiled grammar and the collapsed learners' `Restaurants`
(`cvbayes.models.adaptor.kernels`): its proposal is the PCFG approximation of the state without the
utterance (`fill_predictive_table`).

Storage (all hot loops in numba)
--------------------------------
A parse is an int64 array of nodes in preorder (`tree_nodes`), one row per kernel rule application with
the columns below; ``OWNER`` is the nearest ancestor that is an adapted node served by the base (the
node that opened a table: its subtree down to the next such nodes is that table's content), -1 for the
utterance itself; ``LAST`` is one past the node's subtree; ``TABLE`` the table an adapted node sits at.
What a table or an utterance put in the counts is found from its tree: the plain nodes and the adapted
nodes whose ``OWNER`` it is (and an opener's own base rule).  The tables are a pool of arrays
(`Sampler.pool`): customers, yield, the opener (tree id, node), and per yield a doubly linked list in
the order the tables opened (the order the Chinese restaurant draws walk).  Parse arrays stay stored,
by id, while an utterance or an open table refers to them.  The table-label move (`Sampler.relabel`)
gives a table new content by splicing it into a copy of its opener's tree under a fresh id (`splice`), so
that an utterance's tree always holds the current content of the tables it opened.
"""
from __future__ import annotations

import math
from functools import cached_property
from typing import NamedTuple

import numpy as np
from numba import njit
from scipy.special import gammaln

from ...checkpoints import NO_CHECKPOINT
from ...core.restaurants import log_seating_probability
from ...core.units import ZeroProbabilityError
from ...trees.cells import sentence_cells
from ...trees.grammar import BINARY, LEXICAL, SPAN, UNARY, AnySubstring, KernelGrammar, Terminal
from ...trees.inside_outside import build_tables, chart_buffers, sentence_sample
from .hyperparameters import resample_py_parameters
from .kernels import (Restaurants, all_predictive_weights, empty_restaurants, fill_predictive_table,
                      substring_occurrences)

# columns of a parse's node array
RULE, SYMBOL, ADAPTED, YIELD, CACHED, BEGIN, END, OWNER, LAST, TABLE = range(10)
N_COLUMNS = 10
# the table pool's arrays
(TABLE_CUSTOMERS, TABLE_YIELD, TABLE_PREVIOUS, TABLE_NEXT, YIELD_HEAD, YIELD_TAIL, TABLE_TREE, TABLE_NODE,
 FREE_TABLES, N_FREE) = range(10)


class Relabelling(NamedTuple):
    """The table-label move's view of the grammar and the utterances (`Sampler._relabelling`)."""

    rooted: list
    cache_first: np.ndarray
    occurrences: np.ndarray
    ambiguous: np.ndarray


class Sampler:
    """Johnson, Griffiths and Goldwater's (2007) Metropolis-Hastings sampler over utterance parses.

    The proposal is a tree drawn from the PCFG approximation of the state without the utterance
    (`fill_predictive_table`: cache weights (n_s - a t_s) / (n + b), base (b + a T) / (n + b) times the
    Dirichlet predictive); the target is the exact sequential probability of the tree under the
    Pitman-Yor restaurants and the Dirichlet-multinomial base rules, with its own nodes updating the
    counts as they are generated (`log_target`); accepted trees are seated by the Chinese restaurant
    rule, a cached node at a table of its yield with probability proportional to (customers - a)
    (`add_tree`).  Storage: module notes.
    """

    initial_tables = 1024     # the table pool's first capacity

    def __init__(self, compiled, layout, batch, alpha, discount, concentration, rng):
        self.rng = rng
        self.compiled, self.layout, self.batch = compiled, layout, batch
        kernel = compiled.kernel
        self.cell_offsets, self.cell_rules = sentence_cells(kernel, batch.tokens, batch.offsets, batch.span_ids,
                                                            batch.span_offsets, compiled.n_rules)
        n_adapted = layout.adapted_symbol.shape[0]
        n_rules, n_nonterminals = compiled.n_rules, compiled.n_nonterminals
        self.state = empty_restaurants(compiled, layout, alpha, layout.adapted_symbol, discount, concentration)
        # numba's dispatcher types a NamedTuple argument in Python (2-3 us for the state's 21 fields or the
        # kernel grammar's, at each of the four calls of an MH step) and a plain tuple in C: the calls below
        # pass both as plain tuples of the same arrays, which the kernels name again
        self.fields, self.kernel_fields = tuple(self.state), tuple(kernel)
        # log_target's count changes, zero between calls
        self.scratch = (np.zeros(n_rules), np.zeros(n_nonterminals), np.zeros(n_rules), np.zeros(n_rules),
                        np.zeros(n_adapted), np.zeros(n_adapted))
        self.family_of = np.full(kernel.n_symbols, -1, dtype=np.int64)
        self.family_of[kernel.span_parent] = np.arange(kernel.span_parent.shape[0])
        self.pool = _empty_pool(n_rules, self.initial_tables)     # grown as needed (`_commit`)
        self.trees: dict[int, np.ndarray] = {}     # stored parses by id
        self.references: dict[int, int] = {}       # utterances and open tables that use each
        self.current = np.full(len(batch), -1, dtype=np.int64)
        self.next_tree = 0
        longest = int(np.diff(batch.offsets).max())
        self.buffers = chart_buffers(kernel, max(longest, 1))
        self.rows = np.empty((self._row_limit(longest), 5), dtype=np.int64)
        self.nodes = np.empty((self.rows.shape[0], N_COLUMNS), dtype=np.int64)
        self.accepted = self.proposed = self.repairs = 0
        # a nonterminal that starts as a Dirichlet process (a = 0) stays one (Johnson's py-cfg)
        self.sample_discount = discount > 0

    def _row_limit(self, length):
        """The rows `sentence_sample` may write for an utterance of `length` tokens."""
        return max(2 * length - 1, 1) * (self.compiled.kernel.n_symbols + 1) * 8

    # trees
    def _propose(self, i, temperature=1.0):
        """A tree for utterance i from the proposal (its node array) and the proposal's weights (each
        to the power 1 / temperature)."""
        tokens, spans = self.batch.sentence(i)
        return self._draw(self.kernel_fields, i, tokens, spans, -1, temperature, f"utterance {i}")

    def _draw(self, kernel_fields, i, tokens, spans, root_cache, temperature, what):
        """A tree of ``tokens`` (spans: their substring ids) rooted at ``kernel_fields``' start from the
        proposal on utterance i's cells without the cache rule ``root_cache`` (-1: none), and the weights."""
        rows = self.rows[:self._row_limit(tokens.shape[0])]
        n_nodes = propose(kernel_fields, self.fields, self.cell_rules, self.cell_offsets[i],
                          self.cell_offsets[i + 1], 1.0 / temperature, tokens, spans, self.buffers,
                          int(self.rng.integers(2 ** 62)), rows, self.layout.adapted_of,
                          self.compiled.n_nonterminals, self.family_of, self.nodes, root_cache)
        if n_nodes == 0:
            raise ZeroProbabilityError(f"{what} has no parse under the grammar")
        if n_nodes < 0:
            raise RuntimeError(f"{what}: a sampled unary chain overflowed the derivation buffer")
        return self.nodes[:n_nodes].copy(), self.state.table

    # the restaurants
    def _commit(self, i, nodes):
        """Seat utterance i's parse (`add_tree`) and store it under a fresh id."""
        tree = self._fresh_tree()
        self.trees[tree] = nodes
        self.references[tree] = 1 + self._seat(nodes, tree, 0, nodes.shape[0])
        self.current[i] = tree

    def _fresh_tree(self):
        """A tree id never used before."""
        self.next_tree += 1
        return self.next_tree - 1

    def _seat(self, nodes, tree, first, stop):
        """`add_tree` on nodes first..stop-1 of ``tree`` (the pool grown first if it may run out); returns
        the number of tables opened."""
        if self.pool[N_FREE][0] < stop - first:
            self.pool = _grown_pool(self.pool, stop - first)
        uniforms = self.rng.random(int(np.count_nonzero(nodes[first:stop, CACHED])))
        return add_tree(self.fields, nodes, tree, uniforms, self.pool, first, stop)

    def _remove(self, i):
        """Take utterance i's parse out: its counts and customers, and the content of every table that
        empties (recursively)."""
        self._release([(int(self.current[i]), -1)])
        self.current[i] = -1

    def _take_out(self, tree, owner):
        """Take out what node ``owner`` of ``tree`` put in the state (`remove_owned`); returns the openers
        (tree, node) of the tables that closed."""
        nodes, pool = self.trees[tree], self.pool
        closed = np.empty(nodes.shape[0], dtype=np.int64)
        n_closed = remove_owned(self.fields, nodes, owner, pool, closed)
        return [(int(pool[TABLE_TREE][t]), int(pool[TABLE_NODE][t])) for t in closed[:n_closed]]

    def _release(self, pending):
        """`_take_out` every (tree, owner) of ``pending`` and of the tables that close on the way, dropping
        the trees no longer referred to."""
        while pending:
            tree, owner = pending.pop()
            pending.extend(self._take_out(tree, owner))
            self.references[tree] -= 1
            if self.references[tree] == 0:
                del self.trees[tree], self.references[tree]

    def saved(self):
        """What the sweeps change beside the restaurants' arrays: the table pool, the stored trees (one
        node array with each tree's id and size), the utterances' trees and the MH tallies."""
        ids = np.array(sorted(self.trees), dtype=np.int64)
        trees = [self.trees[t] for t in ids]
        return {"pool": list(self.pool), "ids": ids, "sizes": np.array([tree.shape[0] for tree in trees], dtype=np.int64),
                "nodes": np.concatenate(trees) if trees else np.zeros((0, N_COLUMNS), np.int64),
                "references": np.array([self.references[t] for t in ids], dtype=np.int64),
                "current": self.current, "next_tree": self.next_tree,
                "tallies": [self.accepted, self.proposed, self.repairs]}

    def restore(self, saved):
        """The state `saved` returned."""
        self.pool = tuple(np.array(column) for column in saved["pool"])
        ids = saved["ids"].tolist()
        nodes = np.split(np.array(saved["nodes"]), np.cumsum(saved["sizes"])[:-1]) if ids else []
        self.trees = dict(zip(ids, nodes))
        self.references = dict(zip(ids, saved["references"].tolist()))
        self.current[...] = saved["current"]
        self.next_tree = saved["next_tree"]
        self.accepted, self.proposed, self.repairs = saved["tallies"]

    def initialise(self, order):
        """Add the utterances one by one, each with a tree drawn from the proposal of those before it."""
        for i in order:
            self._commit(i, self._propose(i)[0])

    def step(self, i, temperature=1.0):
        """One MH step on utterance i.

        The proposal cannot reuse a table the utterance itself opened, so a current tree whose cached
        nodes sat only at tables of the same utterance (reachable once the other customers left) has
        proposal probability zero; the new tree is then taken without the test (a repair move, where the
        chain is not exact, as in `relabel`; the posterior test counts how often it happens: ``repairs``).

        With a ``temperature`` T != 1 the step targets p(tree | the others)^(1/T), the proposal's
        weights raised to 1/T as well (Johnson and Goldwater 2009's annealing, as in Johnson's py-cfg;
        the seating of an accepted tree is not annealed); `annealing_temperature` gives the schedule.
        """
        old_tree = int(self.current[i])
        old = self.trees[old_tree]
        self._remove(i)
        new, table = self._propose(i, temperature)
        old_proposal, old_target, new_proposal, new_target = log_scores(self.fields, old, new, table, self.scratch)
        self.proposed += 1
        if old_target == -math.inf:
            self.repairs += 1
            self.accepted += 1
            self._commit(i, new)
            return
        log_ratio = (new_target - old_target) / temperature - new_proposal + old_proposal
        if log_ratio >= 0 or self.rng.random() < math.exp(log_ratio):
            self.accepted += 1
            self._commit(i, new)
        else:     # a copy: a table the old parse opened may still hold its nodes (and their tables)
            self._commit(i, old.copy() if old_tree in self.trees else old)

    @cached_property
    def _relabelling(self):
        """What the table-label move needs, built on its first use (a fit without it pays nothing): each
        adapted X's kernel rooted at X, the first rule of its cache family, one occurrence (utterance, begin)
        of every substring, and whether X's base can parse a yield in more than one way."""
        kernel, batch, compiled = self.compiled.kernel, self.batch, self.compiled
        symbols = self.layout.adapted_symbol
        names = [compiled.nonterminals[symbol] for symbol in symbols]
        single = single_parse_nonterminals(compiled.grammar, set(names))
        return Relabelling([tuple(kernel._replace(start=int(symbol))) for symbol in symbols],
                           kernel.span_base[self.family_of[symbols]],
                           substring_occurrences(batch.offsets, batch.span_ids, batch.span_offsets,
                                                 int(kernel.span_count.max())),
                           np.array([name not in single for name in names]))

    def relabel(self, t, temperature=1.0):
        """Johnson's table-label move on open table t (Johnson and Goldwater 2009; ``-R -1`` of Johnson's
        py-cfg): a new content for the table, its base parse of its yield s.

        The content c (the opener's base rule, the plain rules down to the next adapted nodes and those
        nodes' customers, with the content of every table that empties, recursively) is taken out; c' is
        drawn from the proposal of the rest, rooted at the table's X with X's base rules only (its cache
        rule at s is left out: the table stays, with its customers), on s; c' replaces c with probability

            min(1, [p(c' | rest) / p(c | rest)]^(1/T) q(c) / q(c'))

        p the exact sequential probability of a content given the rest (`log_target`: the factor of the
        opener's own table is the same for both and cancels), q the proposal (`log_proposal`), T the
        temperature.  The yields of the table and of every tree above it stay; an accepted c' is seated by
        the Chinese restaurant rule as the utterance step's trees are (`add_tree`), a rejected c is seated
        again.  A c the proposal cannot give (a nested table it shares only with itself) is replaced
        without the test, as in `step`.  The content goes into a copy of the opener's tree (`splice`).
        """
        pool = self.pool
        s, tree, k = int(pool[TABLE_YIELD][t]), int(pool[TABLE_TREE][t]), int(pool[TABLE_NODE][t])
        x = int(self.layout.cache_of[s])
        old = content_of(self.trees[tree], k)
        parts = self._relabelling
        unit, begin = parts.occurrences[:, s - parts.cache_first[x]]
        tokens, spans = substring(self.batch.tokens, self.batch.offsets, self.batch.span_ids,
                                  self.batch.span_offsets, unit, begin, old[0, END])
        self._release(self._take_out(tree, k))
        new, table = self._draw(parts.rooted[x], int(unit), tokens, spans, s, temperature, f"table {t}")
        old_proposal, old_target, new_proposal, new_target = log_scores(self.fields, old, new, table, self.scratch)
        log_ratio = (new_target - old_target) / temperature - new_proposal + old_proposal
        accept = old_target == -math.inf or log_ratio >= 0 or self.rng.random() < math.exp(log_ratio)
        self._put_content(tree, k, new if accept else old)

    def _put_content(self, tree, k, content):
        """Seat ``content`` (rooted at its node 0) as the content of the table node k of ``tree`` opened, in
        a copy of the tree under a fresh id (`splice`) that the utterance using it and the tables opened
        outside the content move to."""
        spliced_tree = self._fresh_tree()
        nodes, moved = splice(self.trees[tree], k, content, tree, spliced_tree, self.pool)
        users = np.flatnonzero(self.current == tree)
        self.current[users] = spliced_tree
        self.trees[spliced_tree] = nodes
        state, rule = self.state, nodes[k, RULE]     # the opener's own base rule is its table's
        state.counts[rule] += 1
        state.row_totals[state.rule_parent[rule]] += 1
        self.references[spliced_tree] = moved + users.shape[0] + self._seat(nodes, spliced_tree, k + 1, nodes[k, LAST])
        self.references[tree] -= moved + users.shape[0]
        if self.references[tree] == 0:
            del self.trees[tree], self.references[tree]

    def resample_tables(self, temperature=1.0):
        """`relabel` every open table once, in a random order (py-cfg's ``-R -1``), but those of an X whose
        base gives every yield one parse (`single_parse_nonterminals`): their content cannot change."""
        pool = self.pool
        tables = np.flatnonzero(pool[TABLE_CUSTOMERS] > 0)
        tables = tables[self._relabelling.ambiguous[self.layout.cache_of[pool[TABLE_YIELD][tables]]]]
        for t in self.rng.permutation(tables):
            if self.pool[TABLE_CUSTOMERS][t] > 0:      # not closed by an earlier move
                self.relabel(int(t), temperature)

    def log_joint(self):
        """log p(trees, seating) of the current state: the Dirichlet-multinomial of the base counts
        plus each restaurant's Pitman-Yor probability of its seating (`log_seating_probability`)."""
        state, base = self.state, self.layout.base
        rows = state.row_prior > 0
        total = float((gammaln(state.counts[base] + state.alpha) - gammaln(state.alpha)).sum()
                      + (gammaln(state.row_prior[rows])
                         - gammaln(state.row_totals[rows] + state.row_prior[rows])).sum())
        for x in range(state.discount.shape[0]):
            total += log_seating_probability(state.discount[x], state.concentration[x], self.table_sizes(x))
        return total

    def table_sizes(self, x):
        """The customers of every table of adapted X's restaurants (its seating's partition)."""
        customers = self.pool[TABLE_CUSTOMERS]
        open_tables = np.flatnonzero(customers > 0)
        return customers[open_tables[self.layout.cache_of[self.pool[TABLE_YIELD][open_tables]] == x]]

    def resample_hyperparameters(self, n_rounds=5):
        """Slice-sample every adapted X's PY discount a_X and concentration b_X given the seating.

        Johnson and Goldwater (2009), as Johnson's py-cfg: a_X ~ Beta(1, 1), b_X ~ Gamma(shape 0.01, scale 100), each drawn from
        its conditional given the other and the current seating (`log_seating_probability`) by Neal's
        (2003) slice sampler, ``n_rounds`` alternations of b then a; an X whose discount started at 0 keeps
        it (a Dirichlet process, only b is drawn).  The base rules' counts do not depend on (a, b).
        """
        state = self.state
        for x in range(state.discount.shape[0]):
            state.discount[x], state.concentration[x] = resample_py_parameters(
                self.table_sizes(x), state.discount[x], state.concentration[x], self.rng,
                bool(self.sample_discount[x]), n_rounds)

    def words(self, word_symbol):
        """The current segmentation: each utterance's word spans in its sampled tree (the words of a
        cached constituent are those of the subtree that opened its table)."""
        table_tree, table_node = self.pool[TABLE_TREE], self.pool[TABLE_NODE]
        out = []
        for tree in self.current:
            spans = []
            nodes = self.trees[int(tree)]
            stack = [(nodes, 0, nodes.shape[0], 0)]
            while stack:
                nodes, j, stop, shift = stack.pop()
                while j < stop:
                    if nodes[j, SYMBOL] == word_symbol:
                        spans.append((int(nodes[j, BEGIN]) + shift, int(nodes[j, END]) + shift))
                    elif nodes[j, CACHED]:
                        table = nodes[j, TABLE]
                        opener, k = self.trees[int(table_tree[table])], int(table_node[table])
                        stack.append((opener, k + 1, int(opener[k, LAST]),
                                      shift + int(nodes[j, BEGIN]) - int(opener[k, BEGIN])))
                    else:
                        j += 1
                        continue
                    j = int(nodes[j, LAST])
            out.append(sorted(spans))
        return out


class MetropolisHastings:
    """The sampler as a learner (``algorithm="mcmc"``, the sampler structure of `cvbayes.schedules.gibbs`:
    `sweep` and `current`; the sweep is Python-level, as the tree store is, not the numba `gibbs` loop):
    sweeps in a fresh random order each, each followed by the a and b moves (``estimate``); the history
    holds log p(trees, seating)."""

    def __init__(self, training, rng, checkpoint=NO_CHECKPOINT):
        self.training, self.rng = training, rng
        self.sampler = sampler = Sampler(training.compiled, training.layout, training.batch, training.alpha,
                                         training.discount, training.concentration, rng)
        sampler.initialise(rng.permutation(len(training.batch)))
        checkpoint.track_generator("mcmc.rng", rng)
        checkpoint.track_arrays("mcmc.restaurants", sampler.state._asdict())
        checkpoint.track("mcmc.trees", sampler.saved, sampler.restore)

    def sweep(self, iteration):
        """One MH step per utterance (annealed by ``anneal``), the table-label move on every table
        (``resample_tables``), then a and b (``estimate``); log p(trees, seating) after it."""
        sampler, training = self.sampler, self.training
        temperature = 1.0 if training.anneal is None else annealing_temperature(iteration, *training.anneal)
        for i in self.rng.permutation(len(training.batch)):
            sampler.step(int(i), temperature)
        if training.resample_tables:
            sampler.resample_tables(temperature)
        if training.estimate:
            sampler.resample_hyperparameters()
            training.discount[:] = sampler.state.discount
            training.concentration[:] = sampler.state.concentration
        return sampler.log_joint()

    def current(self):
        """The learner itself: the model reads its fitted attributes from it."""
        return self

    def weights(self):
        """The proposal's weights of the whole state (`segment`'s)."""
        return all_predictive_weights(self.sampler.state, self.training.compiled.n_rules)

    def mean_weights(self):
        """The predictive weights (`AdaptorGrammar.score`'s)."""
        return self.weights()

    def customers(self):
        return self.sampler.state.customers


def _empty_pool(n_rules, capacity):
    """A table pool (module notes) with room for `capacity` tables, all free."""
    pool = [np.zeros(capacity, np.int64), np.full(capacity, -1, np.int64), np.full(capacity, -1, np.int64),
            np.full(capacity, -1, np.int64), np.full(n_rules, -1, np.int64), np.full(n_rules, -1, np.int64),
            np.full(capacity, -1, np.int64), np.full(capacity, -1, np.int64),
            np.arange(capacity - 1, -1, -1, dtype=np.int64), np.array([capacity], np.int64)]
    return tuple(pool)


def _grown_pool(pool, room):
    """The pool with at least `room` free tables (capacity doubled as often as needed)."""
    capacity = pool[TABLE_CUSTOMERS].shape[0]
    grown = capacity
    while grown - capacity + pool[N_FREE][0] < room:
        grown *= 2
    new = list(_empty_pool(pool[YIELD_HEAD].shape[0], grown))
    for column in (TABLE_CUSTOMERS, TABLE_YIELD, TABLE_PREVIOUS, TABLE_NEXT, TABLE_TREE, TABLE_NODE):
        new[column][:capacity] = pool[column]
    new[YIELD_HEAD], new[YIELD_TAIL] = pool[YIELD_HEAD], pool[YIELD_TAIL]
    n_free = pool[N_FREE][0]
    fresh = np.arange(grown - 1, capacity - 1, -1, dtype=np.int64)
    new[FREE_TABLES][:fresh.shape[0]] = fresh          # old free ids on top, as before
    new[FREE_TABLES][fresh.shape[0]:fresh.shape[0] + n_free] = pool[FREE_TABLES][:n_free]
    new[N_FREE][0] = fresh.shape[0] + n_free
    return tuple(new)


@njit(cache=True)
def tree_nodes(kernel, rows, n_rows, spans, width, adapted_of, n_nonterminals, family_of, nodes):
    """The node array (module notes) of a derivation's kernel rows in preorder (`sentence_sample`);
    an adapted node's yield is its X's cache rule at the node's substring (Johnson et al. 2007's
    PCFG approximation indexes the caches by yield)."""
    stack = np.empty(n_rows, np.int64)
    remaining = np.empty(n_rows, np.int64)
    depth = 0
    for j in range(n_rows):
        kind, index, begin, middle, end = rows[j, 0], rows[j, 1], rows[j, 2], rows[j, 3], rows[j, 4]
        if kind == BINARY:
            rule, parent, n_children = kernel.binary_rule[index], kernel.binary_parent[index], 2
        elif kind == UNARY:
            rule, parent, n_children = kernel.unary_rule[index], kernel.unary_parent[index], 1
        elif kind == LEXICAL:
            rule, parent, n_children = kernel.lexical_rule[index], kernel.lexical_parent[index], 0
        else:
            rule, parent, n_children = kernel.span_base[index] + middle, kernel.span_parent[index], 0
        adapted = adapted_of[parent] if parent < n_nonterminals else -1
        yield_rule, cached = -1, 0
        if adapted >= 0:
            yield_rule = kernel.span_base[family_of[parent]] + spans[begin * width + end]
            cached = 1 if kind == SPAN else 0
        owner = -1
        if depth > 0:
            up = stack[depth - 1]
            remaining[depth - 1] -= 1
            owner = up if nodes[up, ADAPTED] >= 0 and nodes[up, CACHED] == 0 else nodes[up, OWNER]
        nodes[j, RULE], nodes[j, SYMBOL], nodes[j, ADAPTED], nodes[j, YIELD] = rule, parent, adapted, yield_rule
        nodes[j, CACHED], nodes[j, BEGIN], nodes[j, END], nodes[j, OWNER] = cached, begin, end, owner
        nodes[j, TABLE] = -1
        stack[depth] = j
        remaining[depth] = n_children
        depth += 1
        while depth > 0 and remaining[depth - 1] == 0:
            nodes[stack[depth - 1], LAST] = j + 1
            depth -= 1


@njit(cache=True)
def propose(kernel_fields, fields, cell_rules, first, last, power, tokens, spans, buffers, seed, rows, adapted_of,
            n_nonterminals, family_of, nodes, root_cache):
    """Draw utterance's tree from the PCFG approximation of the state (Johnson et al. 2007): the
    weights `fill_predictive_table` of its cells (each to the power ``power``, the annealed proposal),
    `sentence_sample`, then `tree_nodes`.  Returns the number of nodes (0: no parse; -1: the rows
    overflowed).  The kernel grammar and the `Restaurants` come as plain tuples (`Sampler.fields`).
    ``root_cache`` >= 0: a table's content (`Sampler.relabel`): the kernel is rooted at the table's X,
    ``tokens`` its yield, and X's cache rule at it is left out."""
    kernel, state = KernelGrammar(*kernel_fields), Restaurants(*fields)
    table = fill_predictive_table(state, cell_rules, first, last, power)
    if root_cache >= 0:
        table[root_cache] = 0.0
    _, n_rows = sentence_sample(kernel, build_tables(kernel, table), tokens, spans, buffers, seed, rows)
    if n_rows > 0:
        tree_nodes(kernel, rows, n_rows, spans, tokens.shape[0] + 1, adapted_of, n_nonterminals, family_of, nodes)
    return n_rows


@njit(cache=True)
def log_proposal(nodes, table):
    """log of the product of the proposal's weights over a tree (its normaliser cancels in the ratio)."""
    total = 0.0
    for j in range(nodes.shape[0]):
        rule = nodes[j, RULE]
        if rule >= 0:
            if not table[rule] > 0.0:
                return -np.inf
            total += math.log(table[rule])
    return total


@njit(cache=True)
def log_target(state, nodes, scratch):
    """log p(tree | the other utterances) (Johnson et al. 2007): in preorder, an adapted node at yield s
    is served by the cache with probability (n_s - a t_s) / (n + b) or opens a table with (b + a T) /
    (n + b), a base rule A -> beta has (c + alpha) / (c_A + |row| alpha); the tree's own nodes update the
    counts as they are generated (kept in `scratch`, zero again on return)."""
    counts, row_totals, rule_parent, alpha, row_prior = (state.counts, state.row_totals, state.rule_parent,
                                                         state.alpha, state.row_prior)
    customers, tables, total_customers, total_tables = (state.customers, state.tables, state.total_customers,
                                                        state.total_tables)
    discount, concentration = state.discount, state.concentration
    delta_rules, delta_rows, delta_customers, delta_tables, delta_n, delta_t = scratch
    log_p = 0.0
    for j in range(nodes.shape[0]):
        x = nodes[j, ADAPTED]
        if x >= 0:
            s = nodes[j, YIELD]
            n = total_customers[x] + delta_n[x]
            b, a = concentration[x], discount[x]
            if nodes[j, CACHED]:
                free = customers[s] + delta_customers[s] - a * (tables[s] + delta_tables[s])
                log_p += math.log(free / (n + b)) if free > 0 else -np.inf
            else:
                log_p += math.log((b + a * (total_tables[x] + delta_t[x])) / (n + b))
                delta_tables[s] += 1
                delta_t[x] += 1
            delta_customers[s] += 1
            delta_n[x] += 1
            if nodes[j, CACHED]:
                continue
        rule = nodes[j, RULE]
        if rule >= 0:
            parent = rule_parent[rule]
            log_p += math.log((counts[rule] + delta_rules[rule] + alpha)
                              / (row_totals[parent] + delta_rows[parent] + row_prior[parent]))
            delta_rules[rule] += 1
            delta_rows[parent] += 1
    for j in range(nodes.shape[0]):
        x, rule = nodes[j, ADAPTED], nodes[j, RULE]
        if x >= 0:
            delta_customers[nodes[j, YIELD]] = 0.0
            delta_tables[nodes[j, YIELD]] = 0.0
            delta_n[x] = 0.0
            delta_t[x] = 0.0
        if rule >= 0:
            delta_rules[rule] = 0.0
            delta_rows[rule_parent[rule]] = 0.0
    return log_p


@njit(cache=True)
def log_scores(fields, old, new, table, scratch):
    """(log q, log p) of the old and of the new tree (`log_proposal`, `log_target`); the target of a
    tree the proposal cannot give (log q = -inf) is taken as -inf (`Sampler.step`).  ``fields``: the
    `Restaurants` as a plain tuple."""
    state = Restaurants(*fields)
    old_proposal = log_proposal(old, table)
    old_target = log_target(state, old, scratch) if old_proposal > -np.inf else -np.inf
    return old_proposal, old_target, log_proposal(new, table), log_target(state, new, scratch)


@njit(cache=True)
def add_tree(fields, nodes, tree, uniforms, pool, first, stop):
    """Seat a parse's nodes first..stop-1 (the whole tree, or a table's content below its opener):
    in preorder, a cached adapted node joins a table of its yield with probability proportional to
    (customers - a) (the Pitman-Yor seating (Johnson et al. 2007); uniforms[c] for the c-th cached node,
    walking the tables in the order they opened), a base-served one opens a table of its own (recording
    the opener: tree id, node), and the base rules outside cached nodes are counted.  Returns the number
    of tables opened.  ``fields``: the `Restaurants` as a plain tuple."""
    state = Restaurants(*fields)
    counts, row_totals, rule_parent = state.counts, state.row_totals, state.rule_parent
    customers, tables, total_customers, total_tables = (state.customers, state.tables, state.total_customers,
                                                        state.total_tables)
    discount = state.discount
    table_customers, table_yield, previous, following, head, tail, table_tree, table_node, free, n_free = pool
    drawn = 0
    opened = 0
    for j in range(first, stop):
        x = nodes[j, ADAPTED]
        if x >= 0:
            s = nodes[j, YIELD]
            customers[s] += 1
            total_customers[x] += 1
            if nodes[j, CACHED]:
                a = discount[x]
                total = 0.0
                t = head[s]
                while t >= 0:
                    total += table_customers[t] - a
                    t = following[t]
                if head[s] < 0:
                    raise ValueError("a cached node's yield has no table")
                target = uniforms[drawn] * total
                drawn += 1
                running = 0.0
                chosen = head[s]
                while True:      # the first table whose running weight passes the target
                    running += table_customers[chosen] - a
                    if running > target or following[chosen] < 0:
                        break
                    chosen = following[chosen]
                table_customers[chosen] += 1
                nodes[j, TABLE] = chosen
                continue
            n_free[0] -= 1
            t = free[n_free[0]]
            table_customers[t] = 1
            table_yield[t] = s
            table_tree[t] = tree
            table_node[t] = j
            previous[t] = tail[s]
            following[t] = -1
            if tail[s] >= 0:
                following[tail[s]] = t
            else:
                head[s] = t
            tail[s] = t
            tables[s] += 1
            total_tables[x] += 1
            nodes[j, TABLE] = t
            opened += 1
        rule = nodes[j, RULE]
        if rule >= 0:
            counts[rule] += 1
            row_totals[rule_parent[rule]] += 1
    return opened


@njit(cache=True)
def content_of(nodes, k):
    """The subtree of node k as a tree of its own (its node 0 the root, positions from its yield's start)."""
    content = nodes[k:nodes[k, LAST]].copy()
    content[:, LAST] -= k
    content[1:, OWNER] -= k
    content[0, OWNER] = -1
    content[:, BEGIN:END + 1] -= nodes[k, BEGIN]
    return content


@njit(cache=True)
def substring(tokens, offsets, span_ids, span_offsets, unit, begin, length):
    """The tokens of unit's span begin..begin+length-1 and its grid of substring ids (a sentence's)."""
    width, inner = offsets[unit + 1] - offsets[unit] + 1, length + 1
    source = span_ids[span_offsets[unit]:span_offsets[unit + 1]]
    spans = np.full(inner * inner, -1, dtype=np.int64)
    for j in range(length):
        for end in range(j + 1, inner):
            spans[j * inner + end] = source[(begin + j) * width + begin + end]
    return tokens[offsets[unit] + begin:offsets[unit] + begin + length], spans


@njit(cache=True)
def splice(nodes, k, content, tree, spliced_tree, pool):
    """``tree``'s nodes with node k's subtree replaced by ``content`` (a subtree of the same yield rooted at
    its node 0, `content_of`), node k keeping its table and place; the tables opened by the nodes outside
    that subtree (node k's among them) move their opener to ``spliced_tree``.  Returns (the nodes, the
    number of tables moved).  The tables opened inside the old subtree keep their opener in ``tree``."""
    table_customers, table_tree, table_node = pool[TABLE_CUSTOMERS], pool[TABLE_TREE], pool[TABLE_NODE]
    stop, size = nodes[k, LAST], content.shape[0]
    shift = size - (stop - k)
    out = np.empty((nodes.shape[0] + shift, N_COLUMNS), dtype=np.int64)
    out[:k] = nodes[:k]
    out[k + size:] = nodes[stop:]
    for j in range(out.shape[0]):
        if k <= j < k + size:
            out[j] = content[j - k]
            out[j, LAST] += k
            out[j, OWNER] += k
            out[j, BEGIN] += nodes[k, BEGIN]
            out[j, END] += nodes[k, BEGIN]
            continue
        for column in (LAST, OWNER):
            if out[j, column] >= stop:
                out[j, column] += shift
    for column in (OWNER, TABLE):
        out[k, column] = nodes[k, column]
    moved = 0
    for j in range(out.shape[0]):
        if k < j < k + size or out[j, ADAPTED] < 0 or out[j, CACHED]:
            continue
        t, before = out[j, TABLE], j - shift if j >= k + size else j
        if t >= 0 and table_customers[t] > 0 and table_tree[t] == tree and table_node[t] == before:
            table_tree[t], table_node[t] = spliced_tree, j
            moved += 1
    return out, moved


@njit(cache=True)
def remove_owned(fields, nodes, owner, pool, closed):
    """Take out what `owner` put in the state (node `owner`'s table, or the utterance at -1): its base
    rules and its adapted nodes' customers; a table left without customers is closed and listed in
    `closed` (its content is the caller's next to remove).  Returns the number of closed tables.
    ``fields``: the `Restaurants` as a plain tuple."""
    state = Restaurants(*fields)
    counts, row_totals, rule_parent = state.counts, state.row_totals, state.rule_parent
    customers, tables, total_customers, total_tables = (state.customers, state.tables, state.total_customers,
                                                        state.total_tables)
    table_customers, table_yield, previous, following, head, tail, table_tree, table_node, free, n_free = pool
    first, stop = (0, nodes.shape[0]) if owner < 0 else (owner + 1, nodes[owner, LAST])
    if owner >= 0 and nodes[owner, RULE] >= 0:     # the opener's own base rule is its table's
        rule = nodes[owner, RULE]
        counts[rule] -= 1
        row_totals[rule_parent[rule]] -= 1
    n_closed = 0
    for j in range(first, stop):
        if nodes[j, OWNER] != owner:
            continue
        x = nodes[j, ADAPTED]
        if x < 0:
            rule = nodes[j, RULE]
            if rule >= 0:
                counts[rule] -= 1
                row_totals[rule_parent[rule]] -= 1
            continue
        s, t = nodes[j, YIELD], nodes[j, TABLE]
        customers[s] -= 1
        total_customers[x] -= 1
        table_customers[t] -= 1
        if table_customers[t] == 0:
            if previous[t] >= 0:
                following[previous[t]] = following[t]
            else:
                head[s] = following[t]
            if following[t] >= 0:
                previous[following[t]] = previous[t]
            else:
                tail[s] = previous[t]
            tables[s] -= 1
            total_tables[x] -= 1
            free[n_free[0]] = t
            n_free[0] += 1
            closed[n_closed] = t
            n_closed += 1
    return n_closed


def single_parse_nonterminals(grammar, adapted):
    """The adapted nonterminals whose base rules give every yield at most one parse (the table-label move
    leaves their tables as they are): none below them is adapted (a nested table may be shared or not),
    and a sufficient condition for an unambiguous region holds: the yield lengths of each nonterminal's
    rules are disjoint intervals (the length picks the rule) and at most one child of a rule has a
    variable length (the splits are fixed).  ``grammar``: the augmented grammar (its cache families
    ``X -> <any>`` of the adapted X are not base rules)."""
    rules = {}
    for rule in grammar.rules:
        if not (rule.lhs in adapted and rule.kind == SPAN):
            rules.setdefault(rule.lhs, []).append(rule.rhs)
    shortest = {name: math.inf for name in rules}
    longest = {name: 0.0 for name in rules}

    def span(child):
        if isinstance(child, Terminal):
            return 1, 1
        if isinstance(child, AnySubstring):
            return 1, child.max_length or math.inf
        return shortest[child], longest[child]

    def longer():
        return {name: max(sum(span(c)[1] for c in rhs) for rhs in options) for name, options in rules.items()}

    for _ in range(len(rules) + 1):      # the shortest and bounded longest yields settle within |N| rounds
        shortest = {name: min(sum(span(c)[0] for c in rhs) for rhs in options) for name, options in rules.items()}
        grown = longer()
        unbounded = {name for name in rules if grown[name] != longest[name]}
        longest = grown
    longest.update(dict.fromkeys(unbounded, math.inf))
    for _ in range(len(rules)):          # and what uses an unbounded one is unbounded
        longest = longer()

    def unambiguous(name, seen):
        if name in seen:          # recursion on a shorter span (the lengths below keep it unique)
            return True
        intervals = sorted(tuple(map(sum, zip(*map(span, rhs)))) for rhs in rules[name])
        if any(low <= previous_high for (_, previous_high), (low, _) in zip(intervals, intervals[1:])):
            return False
        for rhs in rules[name]:
            if sum(low != high for low, high in map(span, rhs)) > 1:
                return False
            for child in rhs:
                if isinstance(child, str) and (child in adapted or not unambiguous(child, seen | {name})):
                    return False
        return True

    return {name for name in adapted if unambiguous(name, frozenset())}


def annealing_temperature(sweep, start, n_sweeps):
    """The temperature of sweep ``sweep`` (from 0): 1 / T falls geometrically from 1 / ``start`` to 1
    over the first ``n_sweeps`` sweeps and stays at 1 after them (Johnson's py-cfg schedule; Johnson and
    Goldwater 2009 anneal their adaptor grammar samplers)."""
    if sweep >= n_sweeps - 1 or start == 1.0:
        return 1.0
    return start ** (1.0 - sweep / (n_sweeps - 1))


def parse_anneal(text):
    """The command lines' ``--anneal T0,SWEEPS`` (e.g. ``10,400``) as the model's ``anneal`` pair."""
    try:
        start, sweeps = text.split(",")
        return float(start), int(sweeps)
    except ValueError:
        raise ValueError(f"--anneal takes T0,SWEEPS (e.g. 10,400), got {text!r}") from None
