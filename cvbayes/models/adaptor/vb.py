"""VB for adaptor grammars (Cohen, Blei and Smith 2010) on the batch schedule (`cvbayes.schedules.batch`).

Truncated PY stick-breaking, v_k ~ Beta(1 - a, b + k a), over a *grammaton* of ``truncation`` candidate
yields per adapted X, the mass beyond the last stick left to the base; q(v_k) = Beta(1 - a + u_k, b + k a
+ sum_{j > k} u_j + u_base), q(theta) = Dir(alpha + base rule counts), inside-outside on the weights
exp E[log .] (thesis eq. 4.12, `cvbayes.core.rules.log_geometric_cell`).  After every E-step the
grammaton is refreshed: the ``truncation`` yields with most expected customers, in decreasing order; a
yield that enters it starts with its expected customers as its stick's count, and one whose count u_K is
below 1 is left out: dropping the last atom s_K, its u_K customers served by the base instead, changes the
ELBO (the E-step's expectations held) by -(1 - u_K) log H_X(s_K) - log [B(1 - a + u_K, b + K a + u_base) /
B(1 - a, b + K a)], which is positive when u_K < 1 (H_X <= 1 under the weights below, B falls in its first
argument).  Kept, such near-empty sticks each cost the base E[log(1 - v_K)] ~ psi(b) - psi(1 + b) ~ -1/b
(colloc-syllable's Word, b = 0.1, on 2,000 Brent utterances: 8 sticks of u < 0.1 took log prod_k (1 - v_k)
to -78 of its -107), so that no new yield could reach the grammaton.

Each atom s_k of X is a tree drawn once from X's base H_X (Cohen, Blei and Smith 2010's E_q[log p(z_Xk |
theta)] and its q(z_Xk) over the trees of yield s_k): every pass parses the grammaton's yields rooted at X
with X's base rules at the root, under the same weights as the utterances; their rule counts join
q(theta)'s, their nested adapted nodes are customers of the restaurants below, and their log Z (without
X's base mass prod_k (1 - v_k), which an atom does not pass through) is part of the ELBO (`atom_step`).
Without them an atom's content is free: merging two frequent words into one atom costs nothing but
sticks, and VB drifts to whole phrases as words.  The ELBO can dip when the grammaton changes and never
does while it is fixed.
"""
import numpy as np
from scipy.special import betaln, digamma

from ...checkpoints import NO_CHECKPOINT
from ...core.rules import slot_kl
from ...core.units import ZeroProbabilityError
from ...trees.grammar import SentenceBatch
from ...trees.inside_outside import chart_chunks, make_tables
from .hyperparameters import maximise
from .kernels import batch_expectations, substring_batch, substring_occurrences, vb_table
from .layout import utterance_types
from .sampler import Sampler


def py_sticks(counts, base_uses, a, b):
    """q(v) of a truncated Pitman-Yor stick (Cohen, Blei and Smith 2010) from the expected customers ``counts``
    (K,) of its atoms in stick order and ``base_uses`` served by the base: q(v_k) = Beta(1 - a + u_k, b + k a +
    sum_{j > k} u_j + u_base).  Returns (first, second) of the K Betas, E[log pi_k] (K,) and E[log prod_k
    (1 - v_k)], the base's log weight."""
    k = np.arange(1, counts.shape[0] + 1)
    after = np.cumsum(counts[::-1])[::-1] - counts        # sum_{j > k} u_j
    first = 1.0 - a + counts
    second = b + k * a + after + base_uses
    log_not = digamma(second) - digamma(first + second)
    log_stop = digamma(first) - digamma(first + second)
    return first, second, log_stop + np.concatenate([[0.0], np.cumsum(log_not)[:-1]]), float(log_not.sum())


def py_stick_kl(first, second, a, b):
    """sum_k KL(Beta(first_k, second_k) || Beta(1 - a, b + k a)): the sticks' part of VB's penalty."""
    if first.shape[0] == 0:
        return 0.0
    k = np.arange(1, first.shape[0] + 1)
    p, q = 1.0 - a, b + k * a
    return float((betaln(p, q) - betaln(first, second) + (first - p) * digamma(first) + (second - q) * digamma(second)
                  + (p + q - first - second) * digamma(first + second)).sum())


class TypeExpectations:
    """VB's E-step over utterance types: identical utterances have identical expectations, so one chart a
    type, its statistics times its number of copies; the types are grouped by that number, one batch of
    the chart kernels a group.  Over all the types in one process, over a shard's on a Dask worker
    (`cvbayes.models.adaptor.sharded`).

    ``types`` is the `SentenceBatch` of the distinct utterances, ``copies`` (n_types,) their counts.
    """

    def __init__(self, compiled, adapted_symbol, types, copies):
        self.kernel, self.n_rules, self.adapted_symbol = compiled.kernel, compiled.n_rules, adapted_symbol
        groups = {}
        for i, count in enumerate(copies):
            groups.setdefault(float(count), []).append(i)
        self.groups = [(count, batch_, chart_chunks(compiled.kernel, batch_.offsets))
                       for count, batch_ in ((count, types.take(members)) for count, members in groups.items())]

    def __call__(self, tables):
        """((rule counts, customers), sum of log Z) under the kernel ``tables`` (eq. 4.12's weights)."""
        counts, customers, evidence = np.zeros(self.n_rules), np.zeros(self.n_rules), 0.0
        for copies, batch_, chunks in self.groups:
            found, served, log_z = batch_expectations(
                self.kernel, tables, batch_.tokens, batch_.offsets, batch_.span_ids, batch_.span_offsets, chunks,
                self.n_rules, self.adapted_symbol)
            if not np.all(np.isfinite(log_z)):
                raise ZeroProbabilityError("an utterance has no parse under the grammar")
            counts += copies * found
            customers += copies * served
            evidence += copies * float(log_z.sum())
        return (counts, customers), evidence


class VariationalBayes:
    """VB's q(theta) and q(v), and the batch schedule's structure (``tables``, ``expectations``,
    ``penalty``).

    The q update of a pass (the grammaton's refresh and, with ``estimate``, a and b) is `absorb`, which
    ends the E-step (`expectations`), so that the weights seen after a pass are those of the updated q;
    q is the state a checkpoint keeps (the schedule's statistics are only the last E-step's).
    """

    def __init__(self, training, rng, checkpoint=NO_CHECKPOINT):
        self.training = training
        compiled, layout = training.compiled, training.layout
        n_rules, n_adapted = compiled.n_rules, layout.adapted_symbol.shape[0]
        self.counts = np.zeros(n_rules)            # base rule counts of q(theta)
        self.served = np.zeros(n_rules)            # customers of the last E-step
        self.log_stick = np.full(n_rules, -np.inf)
        self.log_rest = np.zeros(n_adapted)
        self.sticks = [(np.zeros(0, np.int64), np.zeros(0), np.zeros(0)) for _ in range(n_adapted)]
        self.cells = [np.flatnonzero(layout.cache_of == x) for x in range(n_adapted)]
        substrings, batch = compiled.substrings.substrings, training.batch
        self.occurrences = substring_occurrences(batch.offsets, batch.span_ids, batch.span_offsets,
                                                 len(substrings))
        self.lengths = np.array([len(substring) for substring in substrings], dtype=np.int64)
        self.atom_statistics = None      # the atoms' (counts, customers) of the last `penalty`, for `absorb`
        first, self.copies = utterance_types(training.utterances)
        self.types = training.batch.take(first)
        self.e_step = TypeExpectations(compiled, layout.adapted_symbol, self.types, self.copies)
        if training.init == "sample":    # q(theta) and q(v) from the sampler's initial trees
            start = Sampler(compiled, layout, training.batch, training.alpha, training.discount,
                            training.concentration, rng)
            start.initialise(rng.permutation(len(training.batch)))
            self.counts = np.where(layout.base, start.state.counts, 0.0)
            for x in range(n_adapted):
                self.sticks[x] = self.refresh(x, start.state.counts, start.state.customers)
        checkpoint.track("vb.q", self._q, self._restore_q)

    def _q(self):
        return {"counts": self.counts, "served": self.served, "log_stick": self.log_stick, "log_rest": self.log_rest,
                "sticks": list(self.sticks)}

    def _restore_q(self, saved):
        self.counts, self.served, self.log_stick, self.log_rest = (
            np.array(saved[name]) for name in ("counts", "served", "log_stick", "log_rest"))
        self.sticks = [tuple(np.array(part) for part in stick) for stick in saved["sticks"]]

    # the batch schedule's structure
    def tables(self, statistics, rule):
        """The kernel tables of the current q (`absorb` has taken the statistics in)."""
        return make_tables(self.training.compiled, self.weights())

    def expectations(self, tables):
        """The E-step: ((rule counts, customers), sum of log Z), over the utterance types; q then takes them
        in (`absorb`)."""
        statistics, evidence = self.e_step(tables)
        self.absorb(statistics)
        return statistics, evidence

    def penalty(self, rule, statistics, tables):
        """What the ELBO adds to the utterances' log Z under the q the E-step uses: the atoms' log Z
        (`atom_step`, whose counts `absorb` then adds) - KL(q(theta) || p(theta)) - KL(q(v) || p(v))."""
        self.atom_statistics, atoms_log_z = self.atom_step()
        return atoms_log_z - self.dirichlet_kl() - self.beta_kl()

    def atom_step(self):
        """The E-step over the grammaton's atoms (module notes): ((rule counts, customers), sum of log Z), each
        atom of X parsed as a sentence rooted at X under the weights of q with X's cache rules off and X's
        base rules without the base mass (which can underflow to 0 for the utterances' parses)."""
        training = self.training
        compiled, layout, batch = training.compiled, training.layout, training.batch
        counts, customers, evidence = np.zeros(compiled.n_rules), np.zeros(compiled.n_rules), 0.0
        for x, (members, _, _) in enumerate(self.sticks):
            if members.shape[0] == 0:
                continue
            first, _ = layout.cache_family(compiled, x)
            atoms = SentenceBatch(*substring_batch(batch.tokens, batch.offsets, batch.span_ids, batch.span_offsets,
                                                   self.occurrences, self.lengths, members - first))
            rooted = compiled.kernel._replace(start=int(layout.adapted_symbol[x]))
            log_stick, log_rest = self.log_stick.copy(), self.log_rest.copy()
            log_stick[self.cells[x]], log_rest[x] = -np.inf, 0.0
            tables = make_tables(compiled, self.weights(log_stick, log_rest))
            found, served, log_z = batch_expectations(
                rooted, tables, atoms.tokens, atoms.offsets, atoms.span_ids, atoms.span_offsets,
                chart_chunks(rooted, atoms.offsets), compiled.n_rules, layout.adapted_symbol)
            if not np.all(np.isfinite(log_z)):
                raise ZeroProbabilityError(f"an atom of {list(training.spec.adapted)[x]} has no parse under its base")
            served[members] -= 1.0       # the atom's own root is not a customer of X
            counts += found
            customers += served
            evidence += float(log_z.sum())
        return (counts, customers), evidence

    def absorb(self, statistics):
        """q(theta) and q(v) from an E-step's counts and customers and those of the atoms (`atom_step`), over a
        refreshed grammaton; then a and b (``estimate``)."""
        counts, customers = statistics
        if self.atom_statistics is not None:
            counts, customers = counts + self.atom_statistics[0], customers + self.atom_statistics[1]
            self.atom_statistics = None
        self.counts = np.where(self.training.layout.base, counts, 0.0)
        for x in range(len(self.sticks)):
            self.sticks[x] = self.refresh(x, counts, customers)
        self.served = customers
        if self.training.estimate:
            self.estimate_hyperparameters()

    def refresh(self, x, uses, customers):
        """q(v) of adapted X after an E-step, over a refreshed grammaton (module notes)."""
        training, cells = self.training, self.cells[x]
        previous = self.sticks[x][0]
        in_cache = np.zeros(training.compiled.n_rules, dtype=bool)
        in_cache[previous] = True
        served = customers[cells]
        keep = np.flatnonzero(served > 1e-9)
        top = keep[np.argsort(-served[keep], kind="stable")[:training.truncation]]
        members = cells[top]
        counts = np.where(in_cache[members], uses[members], customers[members])
        order = np.argsort(-counts, kind="stable")
        order = order[counts[order] >= 1.0]      # one with fewer than one customer lowers the ELBO (notes)
        members, counts = members[order], counts[order]
        base_uses = max(customers[cells].sum() - counts.sum(), 0.0)
        first, second, log_pi, self.log_rest[x] = py_sticks(counts, base_uses, training.discount[x],
                                                            training.concentration[x])
        self.log_stick[cells] = -np.inf
        self.log_stick[members] = log_pi
        return members, first, second

    def weights(self, log_stick=None, log_rest=None) -> np.ndarray:
        """VB's rule weights: exp E[log theta] times the base mass exp(``log_rest``), exp E[log pi_k] =
        exp(``log_stick``) at the grammaton (by default q's own)."""
        log_stick = self.log_stick if log_stick is None else log_stick
        log_rest = self.log_rest if log_rest is None else log_rest
        compiled, layout = self.training.compiled, self.training.layout
        row_totals = np.bincount(compiled.rule_parent, weights=self.counts, minlength=compiled.n_nonterminals)
        out = np.empty(compiled.n_rules)
        vb_table(self.counts, row_totals, compiled.rule_parent, self.training.alpha, layout.row_prior,
                 layout.cache_of, layout.adapted_of, log_stick, log_rest, out)
        return out

    def mean_weights(self) -> np.ndarray:
        """The posterior mean of q: E[theta] = (C + alpha) / (C_A + |R_A| alpha) times the base's E[prod_k
        (1 - v_k)], E[pi_k] = E[v_k] prod_{j < k} E[1 - v_j] at the grammaton (a proper predictive, for
        `AdaptorGrammar.score`)."""
        compiled, layout, alpha = self.training.compiled, self.training.layout, self.training.alpha
        parent = compiled.rule_parent
        row_totals = np.bincount(parent, weights=self.counts, minlength=compiled.n_nonterminals)
        out = (self.counts + alpha) / np.maximum(row_totals[parent] + layout.row_prior[parent], 1e-300)
        out[~layout.base] = 0.0
        for x, (members, first, second) in enumerate(self.sticks):
            keep = second / (first + second)
            out[members] = first / (first + second) * np.concatenate([[1.0], np.cumprod(keep)[:-1]])
            owned = layout.base & (layout.adapted_of[parent] == x)
            out[owned] *= float(np.prod(keep))
        return out

    def customers(self) -> np.ndarray:
        """The expected customers of the last E-step."""
        return self.served

    def dirichlet_kl(self) -> float:
        """sum_A KL(Dir(alpha + C_A) || Dir(alpha)) over the base rows (eq. 4.3; `cvbayes.core.rules.slot_kl`)."""
        compiled, layout, alpha = self.training.compiled, self.training.layout, self.training.alpha
        parent = compiled.rule_parent[layout.base]
        counts = self.counts[layout.base]
        row_counts = np.bincount(parent, weights=counts, minlength=compiled.n_nonterminals)
        return slot_kl(counts, parent, row_counts, alpha, layout.row_prior / alpha)

    def beta_kl(self) -> float:
        """sum_X sum_k KL(Beta(first_k, second_k) || Beta(1 - a, b + k a)) of the current sticks."""
        return sum(py_stick_kl(first, second, self.training.discount[x], self.training.concentration[x])
                   for x, (_, first, second) in enumerate(self.sticks))

    def estimate_hyperparameters(self):
        """a and b at the mode of sum_k E_q[log Beta(v_k; 1 - a, b + k a)] of X's sticks plus the prior
        (`maximise`)."""
        training = self.training
        for x, (_, first, second) in enumerate(self.sticks):
            if first.shape[0] == 0:
                continue
            k = np.arange(1, first.shape[0] + 1)
            log_stop = digamma(first) - digamma(first + second)
            log_not = digamma(second) - digamma(first + second)

            def log_likelihood(a, b):
                p, q = 1.0 - a, b + k * a
                return float((-betaln(p, q) + (p - 1) * log_stop + (q - 1) * log_not).sum())

            training.discount[x], training.concentration[x] = maximise(
                log_likelihood, training.discount[x], training.concentration[x], training.learn_discount[x])
