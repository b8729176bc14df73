"""Collapsed VI for adaptor grammars on the leave-one-out schedule (`cvbayes.schedules.leave_one_out`,
`passes`); `cvbayes.models.adaptor` documents the derivation and its approximations.
"""
import numpy as np

from ...checkpoints import NO_CHECKPOINT
from ...core.restaurants import dish_seating_likelihood
from ...core.units import ZeroProbabilityError
from ...trees.cells import sentence_cells
from ...trees.grammar import SentenceBatch
from ...trees.inside_outside import batch_log_z, chart_buffers, chart_chunks, make_tables
from .grammar import adapted_regions
from .hyperparameters import maximise
from .kernels import (EMPTY_FLOOR, FIRST_ORDER, PREDICTIVES, CviState, Local, NestedShares, Sentences, Work,
                      all_predictive_weights, cell_expectations, cvi_pass, empty_restaurants, no_nested_shares,
                      seat_cells, start_pass, substring_batch, substring_occurrences)
from .layout import base_chart_grammar, utterance_types


# span ids (each 8 bytes) of the yields a table chart parses at once: the charts of all yields would take
# memory that grows as the fourth power of the utterances' length (1.3 GB for colloc on Brent)
CHUNK_SPANS = 2_000_000


class TableChart:
    """Adapted X's table chart: the base-only grammar of X (`base_chart_grammar`) and every yield of X's
    cache family that X's base rules can derive as a sentence, parsed in chunks of about CHUNK_SPANS span
    ids (`chunks`), each cut from an occurrence of the yields in the utterances.

    inner, to_global, root : the base-only grammar, its rules' global ids, its start's rules
    first : X's first cache rule; yields : (Y,) the derivable yields (X's cache rules minus ``first``)
    children : the kernel symbols (in ``inner``) of the adapted nonterminals used in X's region
    """

    def __init__(self, training, x, mean, region_of, adapted_parent, occurrences, lengths):
        compiled, layout = training.compiled, training.layout
        names = tuple(training.spec.adapted)
        name = names[x]
        inner, to_global, top = base_chart_grammar(training.spec, compiled, training.utterances, name)
        self.first, count = layout.cache_family(compiled, x)
        self.inner, self.to_global, self.x, self.region_of = inner, to_global, x, region_of
        self.layout, self.compiled, self.batch = layout, compiled, training.batch
        self.occurrences, self.lengths = occurrences, lengths
        self.root = np.flatnonzero(inner.rule_parent == top)
        self.children = np.array([inner.nonterminals.index(y) for y in names if adapted_parent.get(y) == name],
                                 dtype=np.int64)
        # yields X's base rules cannot derive never get a customer: their H and tables stay 0
        probe = make_tables(inner, np.where(layout.base[to_global], mean[to_global], 0.0))
        derivable = []
        for chosen in self._split(np.arange(count)):
            yields = self._batch(chosen)
            derivable.append(chosen[np.isfinite(batch_log_z(inner.kernel, probe, yields.tokens, yields.offsets,
                                                            yields.span_ids, yields.span_offsets,
                                                            chart_chunks(inner.kernel, yields.offsets)))])
        self.yields = np.concatenate(derivable)

    def _split(self, chosen):
        """``chosen`` yields in pieces of about CHUNK_SPANS span ids."""
        spans = np.cumsum((self.lengths[chosen] + 1) ** 2)
        cuts = np.searchsorted(spans, np.arange(CHUNK_SPANS, spans[-1], CHUNK_SPANS)) if spans.size else []
        return np.split(chosen, cuts)

    def _batch(self, chosen):
        batch = self.batch
        return SentenceBatch(*substring_batch(batch.tokens, batch.offsets, batch.span_ids, batch.span_offsets,
                                              self.occurrences, self.lengths, chosen))

    def chunks(self):
        """(global cache rules, yields as sentences, cell offsets, cell rules, their global rules, own) of
        every chunk: ``own`` marks the cells of base rules of X's region."""
        for chosen in self._split(self.yields):
            yields = self._batch(chosen)
            cell_offsets, cell_rules = sentence_cells(self.inner.kernel, yields.tokens, yields.offsets,
                                                      yields.span_ids, yields.span_offsets, self.inner.n_rules)
            cell_global = self.to_global[cell_rules]
            own = self.layout.base[cell_global] & (self.region_of[self.compiled.rule_parent[cell_global]] == self.x)
            yield self.first + chosen, yields, cell_offsets, cell_rules, cell_global, own


def nested_statistics(model, cells, sizes, local_customers, cell_global, n_rules):
    """The customers, log q(n = 0) and variance (3, R) that the tables of adapted X's yields give the adapted
    nonterminals used in X's base rules.

    A table of X at yield c holds one base parse of c, with m_{c,s} expected Y-nodes over s (the table
    chart's ``local_customers``), so n^Y_s = sum_c E[t_c] m_{c,s}.  Y has no customer at s when no table of
    any c has a Y-node there; the tables as independent units, each without one with probability 1 - p,
    p = min(m_{c,s}, 1), and the number of c's tables split at zero as the customers are (eq. 5.30-5.35):
    q(none from c) = E[(1 - p)^{t_c}] ~ q(t_c = 0) + q(t_c > 0) (1 - p)^{E_+[t_c]}, q(t_c = 0) = q(n_c = 0),
    E_+[t_c] = E[t_c] / q(n_c > 0), and log q(n^Y_s = 0) = sum_c log q(none from c).  The variance is
    sum_c E[t_c] p (1 - p) (the number of tables at its expectation).
    """
    tables = model.tables[cells]
    empty = np.exp(np.minimum(model.log_empty[cells], 0.0))
    occupied = 1.0 - empty
    per_table = np.where(occupied > 0, tables / np.where(occupied > 0, occupied, 1.0), 0.0)
    weight = np.repeat(tables, sizes)
    p = np.minimum(local_customers, 1.0)
    with np.errstate(divide="ignore"):
        none = np.log(np.repeat(empty, sizes) + np.repeat(occupied, sizes) * (1.0 - p) ** np.repeat(per_table, sizes))
    none = np.maximum(none, np.log(EMPTY_FLOOR))
    out = np.empty((3, n_rules))
    for row, value in enumerate((weight * local_customers, np.where(local_customers > 0, none, 0.0),
                                 weight * p * (1.0 - p))):
        out[row] = np.bincount(cell_global, weights=value, minlength=n_rules)
    return out


class SharesBuilder:
    """`NestedShares` gathered chunk by chunk of the table charts (`CollapsedVariational.refresh_tables`).

    Only the entries m_{c,s} > 0 of a chunk are kept, as int32 rules and float64 m, and the parent
    yields c only as their entry counts: a chunk's yields are ascending and the chunks of the parents'
    cache families are disjoint ranges, so sorting the chunks by their first yield sorts the entries by c
    (as a stable sort of them by c would).  `build` moves the chunks into the final arrays one by one,
    so that the entries are held about once (Brent colloc: they tripled the fit's peak memory when
    kept as int64 (c, s) pairs and concatenated, argsorted and cast at once)."""

    def __init__(self, n_rules, cache_of, n_adapted):
        self.cache_of = cache_of
        self.offsets = np.zeros(n_rules + 1, dtype=np.int64)     # entry counts of c at c + 1, then summed
        self.followers = np.zeros(n_adapted, dtype=np.bool_)
        self.chunks = []          # (first yield, nested yields s, m_{c,s})

    def add(self, rules, cell_offsets, cell_global, local_customers):
        """The entries of one chunk: its yields ``rules`` (ascending), their cells and expected nested nodes."""
        if not rules.shape[0]:
            return
        held = local_customers > 0
        before = np.concatenate(([0], np.cumsum(held)))
        self.offsets[rules + 1] = before[cell_offsets[1:]] - before[cell_offsets[:-1]]
        children = cell_global[held].astype(np.int32)
        self.followers[self.cache_of[children]] = True
        self.chunks.append((rules[0], children, local_customers[held]))

    def build(self) -> NestedShares:
        """The entries sorted by c; the chunks are released as they are copied (the builder is spent)."""
        if not self.chunks:
            return no_nested_shares(self.offsets.shape[0] - 1, self.followers.shape[0])
        offsets = np.cumsum(self.offsets, out=self.offsets)
        children, expected = np.empty(offsets[-1], dtype=np.int32), np.empty(offsets[-1])
        self.chunks.sort(key=lambda chunk: chunk[0], reverse=True)      # popped from the end: by first yield
        start = 0
        while self.chunks:
            _, part_children, part_expected = self.chunks.pop()
            children[start:start + part_children.shape[0]] = part_children
            expected[start:start + part_children.shape[0]] = part_expected
            start += part_children.shape[0]
        return NestedShares(offsets, children, expected, self.followers)


class CollapsedVariational:
    """CVI's state (`cvbayes.models.adaptor.kernels.CviState`), its passes and its table refresh: the
    structure of the leave-one-out schedule (`sweep`, `after_pass`, `current`), built at its start
    (`_start`)."""

    def __init__(self, training, rng, checkpoint=NO_CHECKPOINT):
        self.training, self.rng = training, rng
        compiled, layout = training.compiled, training.layout
        kernel, n_rules = compiled.kernel, compiled.n_rules
        self.names = tuple(training.spec.adapted)
        if training.unit == "type":     # identical utterances left out and put back together
            first, weight = utterance_types(training.utterances)
            batch = training.batch.take(first)
        else:
            batch, weight = training.batch, np.ones(len(training.batch))
        self.n_units = len(batch)
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
                                       training.concentration, PREDICTIVES[training.predictive])
        self.model.top_rule[:] = layout.base & (self.region_of[compiled.rule_parent] < 0)
        self.table_counts = np.zeros(n_rules)
        self.charts = {}
        longest = int(np.diff(batch.offsets).max())
        sentences = Sentences(kernel, batch.tokens, batch.offsets, batch.span_ids, batch.span_offsets, cell_offsets,
                              cell_rules, weight)
        local = Local(np.zeros(cell_rules.shape[0]), np.zeros(cell_rules.shape[0]))
        work = Work(np.zeros(n_rules), np.zeros(n_rules), np.zeros((0, 0)), chart_buffers(kernel, longest),
                    np.zeros((longest + 1, longest + 1, kernel.n_symbols)))
        self.state = CviState(sentences, self.model, local, work, no_nested_shares(n_rules, len(self.names)))
        self._start()
        checkpoint.track_generator("cvi.rng", rng)
        checkpoint.track_arrays("cvi.restaurants", self.model._asdict())
        checkpoint.track_arrays("cvi.local", local._asdict())
        checkpoint.track("cvi.table_counts", lambda: self.table_counts, self._restore_table_counts)
        checkpoint.track("cvi.nested", lambda: tuple(self.state.nested), self._restore_nested)

    def _restore_table_counts(self, saved):
        self.table_counts = np.array(saved)

    def _restore_nested(self, saved):
        self.state = self.state._replace(nested=NestedShares(*(np.array(array) for array in saved)))

    def _start(self):
        """The state before the first pass, from empty counts (H_X under the prior base).

        The start (module notes): ``init="sample"``, the units first get the sampler's trees as local
        statistics; ``"empty"``, the first pass adds the units one by one, each parsed with the first-order
        predictive of those before it.  Either way every adapted node of a unit's parse counts as a customer
        of its restaurant during the start (as the sampler seats the nodes of a table it opens), so that a
        nested restaurant (Word under Colloc) has customers before its first refresh, which then counts
        them from its parent's tables."""
        self.refresh_tables()
        self.predictive = self.model.predictive[0]
        every = self.training.layout.adapted_symbol.astype(np.int64)
        self.start = self.state._replace(model=self.model._replace(counted_symbol=every),
                                         nested=no_nested_shares(self.training.compiled.n_rules, len(self.names)))
        if self.training.init == "sample":
            bad = start_pass(self.start, self.rng.permutation(self.n_units).astype(np.int64),
                             int(self.rng.integers(2 ** 62)))
            if bad >= 0:
                raise ZeroProbabilityError(f"utterance {bad} has no parse under the grammar")
            self._end_start()
        else:
            self.model.predictive[0] = FIRST_ORDER

    def sweep(self, iteration):
        """One CVI pass over the units in a fresh random order (the start's counting in the first pass of
        ``init="empty"``); its summed log leave-one-out predictives."""
        state = self.start if iteration == 0 and self.training.init == "empty" else self.state
        objective, bad = cvi_pass(state, self.rng.permutation(self.n_units).astype(np.int64))
        if bad >= 0:
            raise ZeroProbabilityError(f"utterance {bad} has no parse under the grammar")
        return objective

    def after_pass(self, iteration):
        """The table refresh (after ``init="empty"``'s first pass, the end of the start), then a and b
        (``estimate``)."""
        if iteration == 0 and self.training.init == "empty":
            self._end_start()
            self.model.predictive[0] = self.predictive
        else:
            self.refresh_tables()
        if self.training.estimate:     # from the refreshed tables; theta_s follows b at the next refresh
            self.estimate_hyperparameters()

    def current(self):
        """The learner itself: the model reads its fitted attributes from it."""
        return self

    def _end_start(self):
        """From the start's counting to CVI's: the units' customers of nested adapted nonterminals leave
        their local statistics (the tables count them from now on, `refresh_tables`)."""
        sentences, local = self.state.sentences, self.state.local
        cache_of = self.training.layout.cache_of[sentences.cell_rules]
        nested = np.array([x not in self.top_adapted for x in range(len(self.names))] + [False])
        local.customers[nested[cache_of]] = 0.0       # cache_of -1 (a base rule) reads the last entry
        self.refresh_tables()

    def weights(self):
        """The predictive weights of the final counts (`segment`'s)."""
        return all_predictive_weights(self.model, self.training.compiled.n_rules)

    def mean_weights(self):
        """The predictive weights (`AdaptorGrammar.score`'s)."""
        return self.weights()

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
            if not self.charts:      # where the utterances have each substring, to cut the yields from
                batch, substrings = self.training.batch, self.training.compiled.substrings.substrings
                self.occurrences = substring_occurrences(batch.offsets, batch.span_ids, batch.span_offsets,
                                                         len(substrings))
                self.lengths = np.array([len(substring) for substring in substrings], dtype=np.int64)
            self.charts[x] = TableChart(self.training, x, mean, self.region_of, self.adapted_parent,
                                        self.occurrences, self.lengths)
        return self.charts[x]

    def refresh_tables(self):
        """Tables, H_X and the base counts from the customers (once per CVI pass), top-down over the
        adapted nonterminals (module notes of `cvbayes.models.adaptor`, ``cvi``).

        For adapted X and every yield s of X's cache: H_X(s), the probability that X's base rules
        generate s (inside of ``X%base`` over s with the predictive weights of the current counts, X's own
        base rules without X's base mass); E[t_s] (`seat_cells`), T_X held at its last value meanwhile.  Then the weighted batch inside-outside over
        the yields, yield s weighted by E[t_s], gives the counts of the rules in X's region and, for an
        adapted Y used there, Y's statistics (`nested_statistics`) and the m_{c,s} they are summed from
        (`NestedShares`, which the units' moves take their own share out with).  The counts replace the
        previous pass's table counts.
        """
        compiled, layout, model = self.training.compiled, self.training.layout, self.model
        counts, row_totals, rule_parent, alpha, row_prior = (model.counts, model.row_totals, model.rule_parent,
                                                             model.alpha, model.row_prior)
        n_rules = compiled.n_rules
        weights = all_predictive_weights(model, n_rules)
        mean = (counts + alpha) / np.maximum(row_totals[rule_parent] + row_prior[rule_parent], 1e-300)
        table_counts = np.zeros(n_rules)
        nested = np.zeros((3, n_rules))          # customers, log q(n = 0), variance of nested adapted yields
        # the last pass's m_{c,s} go before the new ones are built (as large as them), unused meanwhile
        self.state = self.state._replace(nested=no_nested_shares(n_rules, len(self.names)))
        shares = SharesBuilder(n_rules, layout.cache_of, len(self.names))
        for x in self.order:
            chart = self._chart(x, mean)
            cells = chart.first + chart.yields
            if x not in self.top_adapted:
                model.customers[cells], model.log_empty[cells], model.variance[cells] = nested[:, cells]
                model.total_customers[x] = model.customers[cells].sum()
            inner_weights = weights[chart.to_global]
            inner_weights[chart.root] = mean[chart.to_global[chart.root]]    # H_X: without X's base mass
            tables = make_tables(chart.inner, inner_weights)
            model.reference_tables[x] = max(model.total_tables[x], 0.0)
            model.reference_customers[x] = max(model.total_customers[x], 0.0)
            total = 0.0
            for rules, yields, cell_offsets, cell_rules, cell_global, own in chart.chunks():
                local_counts, local_customers, log_z = cell_expectations(
                    chart.inner.kernel, tables, yields.tokens, yields.offsets, yields.span_ids, yields.span_offsets,
                    chart_chunks(chart.inner.kernel, yields.offsets), cell_offsets, cell_rules, chart.inner.n_rules,
                    chart.children)
                model.base_mass[rules] = np.exp(log_z)
                total += seat_cells(model, rules)
                sizes = np.diff(cell_offsets)
                weight = np.repeat(model.tables[rules], sizes)
                table_counts += np.bincount(cell_global[own], weights=(weight * local_counts)[own], minlength=n_rules)
                if chart.children.shape[0]:
                    nested += nested_statistics(model, rules, sizes, local_customers, cell_global, n_rules)
                if chart.children.shape[0] and x in self.top_adapted:     # only those a unit's moves reach
                    shares.add(rules, cell_offsets, cell_global, local_customers)
            model.total_tables[x] = total
        counts += table_counts - self.table_counts
        self.table_counts = table_counts
        self.state = self.state._replace(nested=shares.build())
        base = layout.base
        row_totals[:] = np.bincount(rule_parent[base], weights=counts[base], minlength=row_totals.shape[0])

    def estimate_hyperparameters(self):
        """a and b of every adapted nonterminal at the mode of the Pitman-Yor probability of CVI's expected
        table counts plus the prior (`maximise`; ``estimate``); the tables follow at the next refresh.

        Only each yield's expected customers n_s and tables t_s are known, so the seating within a yield is
        summed out (`dish_seating_likelihood`, generalized Stirling numbers of whole counts).  A yield of t_s < 1
        (its first customer opens its first table, so it is there with probability about t_s) counts as a dish
        of weight t_s with n_s / t_s customers at one table.  (Giving each yield's tables their mean size, the
        rule before, drove a to 0 and b up: Brent colloc's Colloc ended at a = 0, b ~ 1,900 where the sampler
        learns a ~ 0.4, b ~ 430.)"""
        model, training = self.model, self.training
        for x in range(len(self.names)):
            cells = np.flatnonzero(training.layout.cache_of == x)
            served, seated = model.customers[cells], model.tables[cells]
            keep = seated > 1e-9
            served, seated = served[keep], seated[keep]
            if seated.sum() <= 1.0 or served.sum() <= seated.sum():
                continue
            weight = np.minimum(seated, 1.0)
            customers = np.maximum(np.rint(served / weight), 1.0)
            tables = np.clip(np.rint(seated / weight), 1.0, customers)
            log_likelihood = dish_seating_likelihood(customers, tables, weight)
            a, b = maximise(log_likelihood, training.discount[x], training.concentration[x],
                            training.learn_discount[x])
            training.discount[x] = model.discount[x] = a
            training.concentration[x] = model.concentration[x] = b
