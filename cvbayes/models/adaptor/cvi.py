"""Collapsed VI for adaptor grammars on the leave-one-out schedule (`cvbayes.schedules.leave_one_out`,
`passes`); `cvbayes.models.adaptor` documents the derivation and its approximations.
"""
import math

import numpy as np
from scipy.special import gammaln

from ...core.restaurants import expected_tables, log_rising
from ...core.units import ZeroProbabilityError
from ...schedules import passes
from ...trees.cells import sentence_cells
from ...trees.inside_outside import batch_log_z, chart_buffers, cubic_chunks, make_tables
from .grammar import adapted_regions
from .hyperparameters import maximise
from .kernels import (CviState, Local, Sentences, Work, all_predictive_weights, cell_expectations, cvi_pass,
                      empty_restaurants, start_pass)
from .layout import base_chart_grammar


class TableChart:
    """Adapted X's table chart: the base-only grammar of X (`base_chart_grammar`) and every yield of X's
    cache family that X's base rules can derive as a sentence, with its cells and chunks, and the rules
    CVI counts from it.

    inner, to_global, root : the base-only grammar, its rules' global ids, its start's rules
    cells : (Y,) the global cache rules of the derivable yields
    yields, chunks, cell_offsets, cell_rules : the yields as sentences of ``inner``, and their cells
    cell_global : the global rule of every cell; own : (cells,) bool, a base rule of X's region
    children : the kernel symbols (in ``inner``) of the adapted nonterminals used in X's region
    """

    def __init__(self, training, x, mean, region_of, adapted_parent):
        compiled, layout = training.compiled, training.layout
        names = tuple(training.spec.adapted)
        name = names[x]
        inner, to_global, top = base_chart_grammar(training.spec, compiled, training.utterances, name)
        first, count = layout.cache_family(compiled, x)
        substrings = [np.asarray(compiled.substrings.substrings[j], dtype=np.int32) for j in range(count)]
        every = inner.prepare(substrings)
        # yields X's base rules cannot derive never get a customer: their theta and tables stay 0
        probe = np.where(layout.base[to_global], mean[to_global], 0.0)
        derivable = np.flatnonzero(np.isfinite(batch_log_z(inner.kernel, make_tables(inner, probe), every.tokens,
                                                           every.offsets, every.span_ids, every.span_offsets,
                                                           cubic_chunks(every.offsets))))
        self.inner, self.to_global = inner, to_global
        self.root = np.flatnonzero(inner.rule_parent == top)
        self.cells = first + derivable
        self.yields = inner.prepare([substrings[j] for j in derivable])
        self.chunks = cubic_chunks(self.yields.offsets)
        self.cell_offsets, self.cell_rules = sentence_cells(inner.kernel, self.yields.tokens, self.yields.offsets,
                                                            self.yields.span_ids, self.yields.span_offsets,
                                                            inner.n_rules)
        self.cell_global = to_global[self.cell_rules]
        self.own = layout.base[self.cell_global] & (region_of[compiled.rule_parent[self.cell_global]] == x)
        self.children = np.array([inner.nonterminals.index(y) for y in names if adapted_parent.get(y) == name],
                                 dtype=np.int64)


class CollapsedVariational:
    """CVI's state (`cvbayes.models.adaptor.kernels.CviState`), its passes and its table refresh."""

    def __init__(self, training, rng):
        self.training, self.rng = training, rng
        compiled, layout, batch = training.compiled, training.layout, training.batch
        kernel, n_rules = compiled.kernel, compiled.n_rules
        self.names = tuple(training.spec.adapted)
        cell_offsets, cell_rules = sentence_cells(kernel, batch.tokens, batch.offsets, batch.span_ids,
                                                  batch.span_offsets, n_rules)
        region, parent = adapted_regions(training.spec)
        self.region_of = np.array([-1 if region.get(a) is None else self.names.index(region[a])
                                   for a in compiled.nonterminals], dtype=np.int32)
        self.adapted_parent = parent
        self.order = self._top_down(parent)
        self.top_adapted = {x for x, name in enumerate(self.names) if parent.get(name) is None}
        counted_symbol = layout.adapted_symbol[sorted(self.top_adapted)].astype(np.int64)
        self.model = empty_restaurants(compiled, layout, training.alpha, counted_symbol, training.discount,
                                       training.concentration)
        self.model.top_rule[:] = layout.base & (self.region_of[compiled.rule_parent] < 0)
        self.table_counts = np.zeros(n_rules)
        self.charts = {}
        longest = int(np.diff(batch.offsets).max())
        sentences = Sentences(kernel, batch.tokens, batch.offsets, batch.span_ids, batch.span_offsets, cell_offsets,
                              cell_rules)
        local = Local(np.zeros(cell_rules.shape[0]), np.zeros(cell_rules.shape[0]))
        work = Work(np.zeros(n_rules), np.zeros(n_rules), np.zeros((0, 0)), chart_buffers(kernel, longest),
                    np.zeros((longest + 1, longest + 1, kernel.n_symbols)))
        self.state = CviState(sentences, self.model, local, work)

    def run(self, n_iter, record):
        """From empty counts (theta under the prior base), the sampled start (``init="sample"``) or not,
        then ``n_iter`` passes, each followed by the table refresh and (``estimate``) a and b."""
        self.refresh_tables()       # theta_s = b H_X(s) of every yield under the prior base
        if self.training.init == "sample":
            bad = start_pass(self.state, self.rng.permutation(len(self.training.batch)).astype(np.int64),
                             int(self.rng.integers(2 ** 62)))
            if bad >= 0:
                raise ZeroProbabilityError(f"utterance {bad} has no parse under the grammar")
            self.refresh_tables()

        def sweep(iteration):
            objective, bad = cvi_pass(self.state, self.rng.permutation(len(self.training.batch)).astype(np.int64))
            if bad >= 0:
                raise ZeroProbabilityError(f"utterance {bad} has no parse under the grammar")
            return objective

        def after_pass(iteration):
            self.refresh_tables()
            if self.training.estimate:     # from the refreshed tables; theta_s follows b at the next refresh
                self.estimate_hyperparameters()

        passes(sweep, n_iter, record, after_pass)

    def weights(self):
        """The predictive weights of the final counts (`segment`'s)."""
        return all_predictive_weights(self.model, self.training.compiled.n_rules)

    def customers(self):
        return self.model.customers

    def _top_down(self, parent) -> list:
        """The adapted nonterminals' indices, each after the one whose region it is used in."""
        order, placed = [], {None}
        while len(order) < len(self.names):
            for x, name in enumerate(self.names):
                if x not in order and parent.get(name) in placed:
                    order.append(x)
                    placed.add(name)
        return order

    def _chart(self, x, mean):
        if x not in self.charts:
            self.charts[x] = TableChart(self.training, x, mean, self.region_of, self.adapted_parent)
        return self.charts[x]

    def refresh_tables(self):
        """Tables, theta and the base counts from the customers (once per CVI pass), top-down over the
        adapted nonterminals (module notes of `cvbayes.models.adaptor`, ``cvi``).

        For adapted X and every yield s of X's cache: H_X(s), the probability that X's base rules
        generate s (inside of ``X%base`` over s with the MEAN weights of the current counts, adapted
        nonterminals below X by their predictive); theta_s = b_X H_X(s); E[t_s] by thesis eq. 5.35
        (`cvbayes.core.restaurants.expected_tables`) from the customers n_s and q(n_s > 0).  Then the
        weighted batch inside-outside over the yields, sentence s weighted by E[t_s], gives the counts of
        the rules in X's region and the customers of the adapted nonterminals used there (whose
        q(n_s > 0) is taken as min(n_s, 1)).  The counts replace the previous pass's table counts.
        """
        compiled, layout, model = self.training.compiled, self.training.layout, self.model
        counts, row_totals, rule_parent, alpha, row_prior = (model.counts, model.row_totals, model.rule_parent,
                                                             model.alpha, model.row_prior)
        customers, tables = model.customers, model.tables
        n_rules = compiled.n_rules
        weights = all_predictive_weights(model, n_rules)
        mean = (counts + alpha) / np.maximum(row_totals[rule_parent] + row_prior[rule_parent], 1e-300)
        table_counts = np.zeros(n_rules)
        nested = np.zeros(n_rules)
        for x in self.order:
            chart = self._chart(x, mean)
            inner, cells = chart.inner, chart.cells
            inner_weights = weights[chart.to_global]
            inner_weights[chart.root] = mean[chart.to_global[chart.root]]    # H_X: without X's base mass
            yields = chart.yields
            local_counts, local_customers, log_z = cell_expectations(
                inner.kernel, make_tables(inner, inner_weights), yields.tokens, yields.offsets, yields.span_ids,
                yields.span_offsets, chart.chunks, chart.cell_offsets, chart.cell_rules, inner.n_rules,
                chart.children)
            if x not in self.top_adapted:
                customers[cells] = nested[cells]
                model.total_customers[x] = customers[cells].sum()
                occupied = np.minimum(customers[cells], 1.0)
            else:
                occupied = -np.expm1(np.minimum(model.log_empty[cells], 0.0))
            theta = model.concentration[x] * np.exp(log_z)
            served = customers[cells]
            ok = (theta > 0) & (served > 0) & (occupied > 0)
            expected = np.zeros(cells.shape[0])
            expected[ok] = expected_tables(theta[ok], served[ok], occupied[ok])
            model.theta[cells] = theta
            tables[cells] = expected
            model.total_tables[x] = expected.sum()
            weight = np.repeat(expected, np.diff(chart.cell_offsets))
            own, cell_global = chart.own, chart.cell_global
            table_counts += np.bincount(cell_global[own], weights=(weight * local_counts)[own], minlength=n_rules)
            nested += np.bincount(cell_global, weights=weight * local_customers, minlength=n_rules)
        counts += table_counts - self.table_counts
        self.table_counts = table_counts
        base = layout.base
        row_totals[:] = np.bincount(rule_parent[base], weights=counts[base], minlength=row_totals.shape[0])

    def estimate_hyperparameters(self):
        """Empirical-Bayes a and b of every adapted nonterminal from CVI's expected seating
        (``estimate``); theta_s follows b at the next table refresh."""
        model, training = self.model, self.training
        for x in range(len(self.names)):
            cells = np.flatnonzero(training.layout.cache_of == x)
            served, seated = model.customers[cells], model.tables[cells]
            keep = seated > 1e-9
            per_table = np.maximum(served[keep] / seated[keep], 1.0)
            seated = seated[keep]
            n, total = float(served.sum()), float(seated.sum())
            if total <= 1.0 or n <= total:
                continue

            def loss(point):
                a, b = point[0], math.exp(point[1])
                seats = log_rising(b, a, total)
                tables_term = float((seated * (gammaln(per_table - a) - gammaln(1.0 - a))).sum())
                return -(seats - gammaln(b + n) + gammaln(b + 1) + tables_term)

            a, log_b = maximise(loss, training.discount[x], training.concentration[x], training.learn_discount[x])
            training.discount[x] = model.discount[x] = a
            training.concentration[x] = model.concentration[x] = math.exp(log_b)
