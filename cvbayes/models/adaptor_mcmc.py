"""The adaptor grammar's reference sampler: Johnson, Griffiths and Goldwater's (2007) Metropolis-Hastings
over utterance parses with Pitman-Yor restaurants (`cvbayes.models.adaptor`, ``fit(algorithm="mcmc")``).

The sampler works on the model's compiled grammar and its CVI state layout (`cvbayes.models.adaptor_kernels`):
its proposal is the PCFG approximation of the state without the utterance (`fill_mean_table`).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from ..core.units import ZeroProbabilityError
from ..trees.grammar import BINARY, LEXICAL, SPAN, UNARY
from ..trees.inside_outside import Derivation, build_tables, chart_buffers, sentence_sample
from .adaptor_kernels import fill_mean_table
from .pcfg_kernels import sentence_cells


class _Node:
    """One node of a sampled parse: its global rule, its adapted index and yield rule (or -1), whether
    the cache served it, and its children (kernel rows in preorder, `_tree`)."""

    __slots__ = ("rule", "parent", "adapted", "yield_rule", "cached", "children", "begin", "end", "table")

    def __init__(self, rule, parent, adapted, yield_rule, cached, begin, end):
        self.rule, self.parent, self.adapted, self.yield_rule = rule, parent, adapted, yield_rule
        self.cached, self.begin, self.end, self.children, self.table = cached, begin, end, [], None


class _Table:
    """A table of a restaurant: its customers and what its base subtree put in the counts."""

    __slots__ = ("customers", "rules", "seated", "tree")

    def __init__(self, tree=None):
        self.customers = 0
        self.tree = tree     # the node that opened it (its subtree is the table's)
        self.rules = []      # base rules of the subtree
        self.seated = []     # (yield rule, _Table) of the adapted nodes inside it


class Sampler:
    """Johnson, Griffiths and Goldwater's (2007) Metropolis-Hastings sampler over utterance parses.

    The proposal is a tree drawn from the PCFG approximation of the state without the utterance
    (`fill_mean_table`: cache weights (n_s - a t_s) / (n + b), base (b + a T) / (n + b) times the
    Dirichlet predictive); the target is the exact sequential probability of the tree under the
    Pitman-Yor restaurants and the Dirichlet-multinomial base rules, with its own nodes updating the
    counts as they are generated; accepted trees are seated by the Chinese restaurant rule, a cached
    node at a table of its yield with probability proportional to (customers - a).
    """

    def __init__(self, model, rng):
        self.model, self.rng = model, rng
        compiled, layout, batch = model.grammar_, model._layout, model._batch
        self.compiled, self.layout, self.batch = compiled, layout, batch
        kernel = compiled.kernel
        self.cell_offsets, self.cell_rules = sentence_cells(kernel, batch.tokens, batch.offsets, batch.span_ids,
                                                            batch.span_offsets, compiled.n_rules)
        n_adapted = len(model.adapted_names)
        self.state = (np.zeros(compiled.n_rules), np.zeros(compiled.n_nonterminals), compiled.rule_parent,
                      model.alpha, layout["row_prior"].astype(float), layout["cache_of"], layout["adapted_of"],
                      layout["adapted_symbol"], np.zeros(compiled.n_rules), np.zeros(compiled.n_rules),
                      np.zeros(n_adapted), np.zeros(n_adapted), model.discount.copy(), model.concentration.copy(),
                      np.zeros(compiled.n_rules))
        self.tables: dict[int, list] = {}
        self.owners = [None] * len(batch)
        self.trees = [None] * len(batch)
        self.family_of = {int(kernel.span_parent[f]): f for f in range(kernel.span_parent.shape[0])}
        self.accepted = self.proposed = self.repairs = 0

    # trees
    def _tree(self, i, applications):
        """The parse as `_Node`s from kernel rows in preorder (module notes of inside_outside)."""
        kernel, layout = self.compiled.kernel, self.layout
        tokens, spans = self.batch.sentence(i)
        width = tokens.shape[0] + 1
        position = 0

        def build():
            nonlocal position
            kind, index, begin, middle, end = (int(v) for v in applications[position])
            position += 1
            if kind == BINARY:
                rule, parent, n_children = kernel.binary_rule[index], kernel.binary_parent[index], 2
            elif kind == UNARY:
                rule, parent, n_children = kernel.unary_rule[index], kernel.unary_parent[index], 1
            elif kind == LEXICAL:
                rule, parent, n_children = kernel.lexical_rule[index], kernel.lexical_parent[index], 0
            else:
                rule, parent, n_children = kernel.span_base[index] + middle, kernel.span_parent[index], 0
            parent = int(parent)
            adapted = int(layout["adapted_of"][parent]) if parent < self.compiled.n_nonterminals else -1
            yield_rule, cached = -1, False
            if adapted >= 0:
                family = self.family_of[parent]
                yield_rule = int(kernel.span_base[family] + spans[begin * width + end])
                cached = kind == SPAN
            node = _Node(int(rule), parent, adapted, yield_rule, cached, begin, end)
            node.children = [build() for _ in range(n_children)]
            return node

        return build()

    def _propose(self, i):
        first, last = self.cell_offsets[i], self.cell_offsets[i + 1]
        table = fill_mean_table(self.state, self.cell_rules, first, last)
        tables = build_tables(self.compiled.kernel, table)
        tokens, spans = self.batch.sentence(i)
        derivation = _sample(self.compiled, tables, tokens, int(self.rng.integers(2 ** 62)))
        if derivation is None:
            raise ZeroProbabilityError(f"utterance {i} has no parse under the grammar")
        return self._tree(i, derivation.applications), table

    @staticmethod
    def _log_proposal(node, table):
        """log of the product of the proposal's weights over a tree (its normaliser cancels)."""
        weight = table[node.rule] if node.rule >= 0 else 1.0
        total = math.log(weight) if weight > 0 else -math.inf
        return total + sum(Sampler._log_proposal(child, table) for child in node.children)

    def _log_target(self, tree):
        """log p(tree | the other utterances), its nodes updating the counts as they are generated."""
        counts, row_totals, rule_parent, alpha, row_prior = self.state[:5]
        customers, tables, total_customers, total_tables, discount, concentration = self.state[8:14]
        delta_rules, delta_rows, delta_customers, delta_tables = {}, {}, {}, {}
        delta_n, delta_t = {}, {}
        log_p = 0.0
        stack = [tree]
        while stack:
            node = stack.pop()
            if node.adapted >= 0:
                x, s = node.adapted, node.yield_rule
                n = total_customers[x] + delta_n.get(x, 0)
                t_all = total_tables[x] + delta_t.get(x, 0)
                b, a = concentration[x], discount[x]
                if node.cached:
                    free = customers[s] + delta_customers.get(s, 0) - a * (tables[s] + delta_tables.get(s, 0))
                    log_p += math.log(free / (n + b)) if free > 0 else -math.inf
                else:
                    log_p += math.log((b + a * t_all) / (n + b))
                    delta_tables[s] = delta_tables.get(s, 0) + 1
                    delta_t[x] = delta_t.get(x, 0) + 1
                delta_customers[s] = delta_customers.get(s, 0) + 1
                delta_n[x] = delta_n.get(x, 0) + 1
                if node.cached:
                    continue
            if node.rule >= 0:
                parent = rule_parent[node.rule]
                c = counts[node.rule] + delta_rules.get(node.rule, 0)
                total = row_totals[parent] + delta_rows.get(parent, 0)
                log_p += math.log((c + alpha) / (total + row_prior[parent]))
                delta_rules[node.rule] = delta_rules.get(node.rule, 0) + 1
                delta_rows[parent] = delta_rows.get(parent, 0) + 1
            stack.extend(reversed(node.children))
        return log_p

    # the restaurants
    def _add_rule(self, rule, owner):
        if rule < 0:
            return
        self.state[0][rule] += 1
        self.state[1][self.state[2][rule]] += 1
        owner.rules.append(rule)

    def _add(self, node, owner):
        if node.adapted >= 0:
            x, s = node.adapted, node.yield_rule
            a = self.state[12][x]
            self.state[8][s] += 1
            self.state[10][x] += 1
            if node.cached:
                choices = self.tables[s]
                weights = np.array([t.customers - a for t in choices])
                table = choices[int(self.rng.choice(len(choices), p=weights / weights.sum()))]
                table.customers += 1
                owner.seated.append((s, table))
                node.table = table
                return
            table = _Table(node)
            table.customers = 1
            self.tables.setdefault(s, []).append(table)
            self.state[9][s] += 1
            self.state[11][x] += 1
            owner.seated.append((s, table))
            owner = table
        self._add_rule(node.rule, owner)
        for child in node.children:
            self._add(child, owner)

    def _remove_owned(self, owner):
        for rule in owner.rules:
            self.state[0][rule] -= 1
            self.state[1][self.state[2][rule]] -= 1
        for s, table in owner.seated:
            x = self.layout["cache_of"][s]
            table.customers -= 1
            self.state[8][s] -= 1
            self.state[10][x] -= 1
            if table.customers == 0:
                self.tables[s].remove(table)
                self.state[9][s] -= 1
                self.state[11][x] -= 1
                self._remove_owned(table)

    def _commit(self, i, tree):
        owner = _Table()
        self._add(tree, owner)
        self.owners[i], self.trees[i] = owner, tree

    def initialise(self, order):
        """Add the utterances one by one, each with a tree drawn from the proposal of those before it."""
        for i in order:
            self._commit(i, self._propose(i)[0])

    def step(self, i):
        """One MH step on utterance i.

        The proposal cannot reuse a table the utterance itself opened, so a current tree whose cached
        nodes sat only at tables of the same utterance (reachable once the other customers left) has
        proposal probability zero; the new tree is then taken without the test (a repair move, the one
        place the chain is not exact; the posterior test counts how often it happens: ``repairs``).
        """
        self._remove_owned(self.owners[i])
        old = self.trees[i]
        new, table = self._propose(i)
        old_proposal = self._log_proposal(old, table)
        old_target = self._log_target(old) if old_proposal > -math.inf else -math.inf
        self.proposed += 1
        if old_target == -math.inf:
            self.repairs += 1
            self.accepted += 1
            self._commit(i, new)
            return
        log_ratio = self._log_target(new) - self._log_proposal(new, table) - old_target + old_proposal
        if log_ratio >= 0 or self.rng.random() < math.exp(log_ratio):
            self.accepted += 1
            self._commit(i, new)
        else:
            self._commit(i, old)

    def log_joint(self):
        """log p(trees, seating) of the current state: the Dirichlet-multinomial of the base counts
        plus each restaurant's Pitman-Yor probability of its seating (the sampler's history)."""
        counts, row_totals, rule_parent, alpha, row_prior = self.state[:5]
        base = self.layout["base"]
        total = float((gammaln(counts[base] + alpha) - gammaln(alpha)).sum()
                      + (gammaln(row_prior[row_prior > 0]) - gammaln(row_totals[row_prior > 0]
                                                                      + row_prior[row_prior > 0])).sum())
        for x in range(len(self.model.adapted_names)):
            a, b = self.state[12][x], self.state[13][x]
            n, t = self.state[10][x], int(round(self.state[11][x]))
            total += float(np.sum(np.log(b + a * np.arange(1, t))) - (gammaln(b + n) - gammaln(b + 1))
                           if t > 0 else 0.0)
            for s, tables in self.tables.items():
                if self.layout["cache_of"][s] == x:
                    total += sum(float(gammaln(tb.customers - a) - gammaln(1 - a)) for tb in tables)
        return total

    def words(self, word_symbol):
        """The current segmentation: each utterance's word spans in its sampled tree."""
        out = []
        for tree in self.trees:
            spans = []
            stack = [tree]
            while stack:
                node, shift = stack.pop() if isinstance(stack[-1], tuple) else (stack.pop(), 0)
                if node.parent == word_symbol:
                    spans.append((node.begin + shift, node.end + shift))
                    continue
                if node.cached:   # the words of a cached constituent are those of its table's subtree
                    opener = node.table.tree
                    stack.extend((child, shift + node.begin - opener.begin) for child in opener.children)
                    continue
                stack.extend((child, shift) for child in node.children)
            out.append(sorted(spans))
        return out


def _sample(compiled, tables, tokens, seed):
    """A tree from the tables (`cvbayes.trees.inside_outside.sentence_sample`)."""
    buffers = chart_buffers(compiled.kernel, max(len(tokens), 1))
    spans = compiled.substrings.span_ids(tokens)
    rows = np.empty((max(2 * len(tokens) - 1, 1) * (compiled.kernel.n_symbols + 1) * 8, 5), dtype=np.int64)
    score, n_out = sentence_sample(compiled.kernel, tables, tokens, spans, buffers, seed, rows)
    if n_out == 0:
        return None
    return Derivation(float(score), np.zeros(0, np.int64), rows[:n_out].copy())
