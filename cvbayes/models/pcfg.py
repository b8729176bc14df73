"""Bayesian PCFGs with Dirichlet priors on the rule rows (thesis eq. 4.1-4.2) and five learners.

``PCFG(algorithm=...).fit(X)`` runs EM, VB, CVI, SCVI or the collapsed Metropolis-Hastings sampler of
Johnson, Griffiths and Goldwater (2007).  They share the inside-outside kernels of `cvbayes.trees` and
differ only in the parameter rule (`cvbayes.core.rules`) and the schedule (`cvbayes.schedules`):
`ALGORITHMS` says which is which.  The PCFG's numba bindings to the schedules are in
models/pcfg_kernels.py.

Rules are numbered globally and grouped by parent (`cvbayes.trees.grammar.CompiledGrammar`), so a
(R,) array is a table or a count vector, and each nonterminal's rules are one Dirichlet row of |R_A|
outcomes with the symmetric prior alpha (eq. 4.2).  Rows of different widths go through core.rules'
sparse-row functions (``slot_*``), one call per width.
"""
from __future__ import annotations

import os

import numpy as np

from ..checkpoints import NO_CHECKPOINT
from ..core import rules
from ..core.rules import MAP, MEAN, VB, check_prior
from ..core.statistics import DecayingCounts
from ..core.units import ZeroProbabilityError
from ..data import Vocabulary
from ..data.corpus import Corpus
from ..schedules import Algorithm, Minibatch, batch, gibbs, leave_one_out, stochastic
from ..schedules.driver import check_positive_int
from ..trees.cells import sentence_cells, shared_rules
from ..trees.grammar import (UNARY, CompiledGrammar, Grammar, compile_grammar, format_grammar,
                             full_cnf_grammar, parse_grammar, read_grammar)
from ..trees.inside_outside import (batch_log_z, chart_buffers, chart_chunks, derivation_to_tree, expected_counts,
                                    make_tables, viterbi_batch)
from .base import BayesModel
from .pcfg_kernels import cvi_pass, local_expected_counts, mh_pass, start_trees
from .shards import Sharding
from .tree_shards import pcfg_batch, pcfg_cvi


SENTENCE = "sentence"

ALGORITHMS = {
    "em": Algorithm(batch, MAP, SENTENCE, "inside-outside, thesis eq. 4.5-4.11 (the MLE when alpha <= 1)"),
    "vb": Algorithm(batch, VB, SENTENCE, "Kurihara and Sato 2006; thesis eq. 4.12"),
    "cvi": Algorithm(leave_one_out, MEAN, SENTENCE, "thesis eq. 4.17-4.24"),
    "scvi": Algorithm(stochastic, MEAN, "minibatch of sentences", "thesis §3.7.2 carried to trees"),
    "mh": Algorithm(gibbs, MEAN, SENTENCE, "Johnson, Griffiths and Goldwater 2007; thesis eq. 4.13-4.16"),
    # CVI on shards, counts one pass stale (AD-LDA style, cvbayes.models.tree_shards)
    "cvi-sharded": Algorithm(leave_one_out, MEAN, "sentence, on shards", "thesis eq. 4.17-4.24; Newman et al. 2009"),
}

OBJECTIVES = {
    "em": "log p(x | theta) + log p(theta) up to a constant (the log-likelihood when alpha <= 1)",
    "vb": "evidence lower bound L^VI (eq. 4.3)",
    "cvi": "sum over sentences of log Z under the surrogate weights (eq. 4.24): a leave-one-sentence-out "
           "predictive log-likelihood",
    "scvi": "per-token log Z of the pass's minibatches under the MEAN weights of the global counts",
    "mh": "log p(x, z | alpha) of the current trees (eq. 4.13)",
    "cvi-sharded": "sum over sentences of log Z under the surrogate weights of the counts frozen at the start of the "
                   "pass plus the own shard's changes (cvbayes.models.tree_shards)",
}

# what fit(client=...) runs (cvbayes.models.tree_shards)
SHARDED_ALGORITHMS = ("em", "vb", "cvi-sharded")


# ------------------------------------------------------------------ rows
class RuleRows:
    """The Dirichlet rows of a compiled grammar (eq. 4.2), grouped by width for core.rules.

    Every rule of a row is a stored slot, so ``slot_table`` and the other ``slot_*`` functions of
    `cvbayes.core.rules` apply to a group of rows of one width |R_A| as they are.
    """

    def __init__(self, grammar: CompiledGrammar, alpha: float):
        self.grammar = grammar
        self.alpha = float(alpha)
        sizes = grammar.row_sizes
        self.groups = []
        for width in np.unique(sizes):
            group_rows = np.flatnonzero(sizes == width)
            slots = np.concatenate([np.arange(grammar.row_offsets[a], grammar.row_offsets[a + 1])
                                    for a in group_rows])
            local_rows = np.repeat(np.arange(group_rows.shape[0]), width)
            self.groups.append((group_rows, slots, local_rows, int(width)))
        self.row_prior = sizes * self.alpha   # |R_A| alpha, the denominators' prior totals

    def totals(self, counts):
        """C_{A -> .} of every row (eq. 4.11)."""
        return np.add.reduceat(np.asarray(counts, dtype=float), self.grammar.row_offsets[:-1])

    def table(self, rule, counts):
        """The (R,) table of ``rule`` (MAP eq. 4.10, VB eq. 4.12, MEAN eq. 4.16/4.24) from counts."""
        counts = np.asarray(counts, dtype=float)
        totals = self.totals(counts)
        out = np.empty(counts.shape[0])
        for group_rows, slots, local_rows, width in self.groups:
            out[slots] = rules.slot_table(rule, counts[slots], local_rows, totals[group_rows], self.alpha, width)
        return out

    def _sum(self, function, values, counts):
        totals = self.totals(counts)
        return sum(function(values[slots], local_rows, totals[group_rows], self.alpha, width)
                   for group_rows, slots, local_rows, width in self.groups)

    def kl(self, counts):
        """sum_A KL(Dir(C_A + alpha) || Dir(alpha)): VB's penalty (eq. 4.3)."""
        counts = np.maximum(np.asarray(counts, dtype=float), 0.0)
        return self._sum(rules.slot_kl, counts, counts)

    def log_prior(self, table, counts):
        """sum (alpha - 1)+ log theta: the prior term EM's MAP objective adds."""
        return self._sum(rules.slot_log_prior, np.asarray(table, dtype=float), counts)

    def log_marginal(self, counts):
        """log p(x, z | alpha) of hard counts, the Dirichlet-multinomial of eq. 4.13."""
        counts = np.asarray(counts, dtype=float)
        return self._sum(rules.slot_log_marginal, counts, counts)


def random_table(grammar: CompiledGrammar, rng) -> np.ndarray:
    """A random starting table: every rule weight U(0, 1], each row normalised.  The deterministic
    learners start from it (EM, VB, SCVI from its expected counts, CVI from each sentence's own), so
    that a seed gives all of them the same start and breaks the symmetry of the nonterminals."""
    return grammar.normalize(1.0 - rng.random(grammar.n_rules))


def has_unary_cycle(grammar: CompiledGrammar) -> bool:
    """Whether the unary rules of the (binarised) grammar chain a symbol back to itself."""
    kernel = grammar.kernel
    children = [[] for _ in range(kernel.n_symbols)]
    for parent, child in zip(kernel.unary_parent, kernel.unary_child):
        children[parent].append(child)
    state = np.zeros(kernel.n_symbols, dtype=np.int8)   # 0 new, 1 on the path, 2 done

    def reaches_path(symbol):
        state[symbol] = 1
        for child in children[symbol]:
            if state[child] == 1 or (state[child] == 0 and reaches_path(child)):
                return True
        state[symbol] = 2
        return False

    return any(state[s] == 0 and reaches_path(s) for s in range(kernel.n_symbols))


def uniform_tree_table(grammar: CompiledGrammar) -> np.ndarray:
    """Weights 1 a rule, under which every tree of a sentence is equally likely.  With a unary cycle
    a sentence has infinitely many trees: then unary rules weigh 1 / (N + 1), so that the chains sum
    (and trees with fewer unary rules are likelier).  MH starts from one tree a sentence drawn from it,
    as collapsed Gibbs for HMMs starts from uniform random states; a tree drawn from `random_table` is
    almost always the one with the fewest rules, since each rule costs a factor ~1 / |R_A| (with
    ``<any>`` rows, the one-stem analysis of every word)."""
    weights = np.ones(grammar.n_rules)
    if has_unary_cycle(grammar):
        weights[grammar.rule_kind == UNARY] = 1.0 / (grammar.kernel.n_symbols + 1)
    return weights


# ------------------------------------------------------------------ the corpus
class TreeCorpus:
    """Sentences laid out for the tree kernels: the `SentenceBatch`, its thread chunks, and (for the
    collapsed algorithms) every sentence's cells (models/pcfg_kernels.py); ``sharding``, fit's shard
    options (`cvbayes.models.shards.Sharding`)."""

    def __init__(self, grammar: CompiledGrammar, sentences, sharding=Sharding()):
        self.grammar = grammar
        self.sentences = sentences
        self.sharding = sharding
        self.batch = grammar.prepare(sentences)
        self.chunks = chart_chunks(grammar.kernel, self.batch.offsets)
        self.lengths = np.diff(self.batch.offsets)
        self._cells = None

    @property
    def n_sentences(self):
        return len(self.sentences)

    @property
    def n_tokens(self):
        return int(self.lengths.sum())

    def cells(self):
        """(cell_offsets, cell_rules) of every sentence, computed once."""
        if self._cells is None:
            b = self.batch
            self._cells = sentence_cells(self.grammar.kernel, b.tokens, b.offsets, b.span_ids, b.span_offsets,
                                         self.grammar.n_rules)
        return self._cells

    def kernel_sentences(self):
        """The ``sentences`` tuple of the kernels' states."""
        b = self.batch
        return (self.grammar.kernel, b.tokens, b.offsets, b.span_ids, b.span_offsets, *self.cells())

    def raise_if_bad(self, log_z):
        """ZeroProbabilityError naming the first sentence whose log Z is -inf."""
        bad = np.flatnonzero(np.asarray(log_z) == -np.inf)
        if bad.size:
            self.raise_bad(int(bad[0]))

    def raise_bad(self, i):
        if i < 0:
            return
        sentence = self.sentences[i]     # tokens, or their ids on a shard
        words = " ".join(self.grammar.vocabulary.decode(sentence) if isinstance(sentence, np.ndarray) else sentence)
        raise ZeroProbabilityError(f"sentence {i} ({words!r}) has no tree under the grammar")



# ------------------------------------------------------------------ schedule structures
class BatchTrees:
    """The PCFG as `cvbayes.schedules.batch` sees it (EM, VB): tables of a rule, the E-step over every
    sentence (eq. 4.8-4.9), and the objective's penalty."""

    def __init__(self, rows: RuleRows, data: TreeCorpus):
        self.rows = rows
        self.data = data

    def tables(self, statistics, rule):
        table = self.rows.table(rule, statistics)
        return table, make_tables(self.data.grammar, table)

    def expectations(self, tables):
        counts, log_z = expected_counts(self.data.grammar, tables[1], self.data.batch, self.data.chunks)
        self.data.raise_if_bad(log_z)
        return counts, float(log_z.sum())

    def penalty(self, rule, statistics, tables):
        """log p(theta) of the table for MAP; -KL(q(theta) || p(theta)) of the counts for VB."""
        if rule == MAP:
            return self.rows.log_prior(tables[0], statistics)
        return -self.rows.kl(statistics)


class TreeMinibatches:
    """The PCFG as `cvbayes.schedules.stochastic` sees it (SCVI): one global block "rules" (R,)
    moved towards each minibatch's expected counts scaled by I / |B| (eq. 3.103-3.104 carried to
    trees), the minibatch parsed under the MEAN table of the current counts (eq. 3.99)."""

    def __init__(self, rows: RuleRows, data: TreeCorpus, counts):
        self.rows = rows
        self.data = data
        self.n_units = data.n_sentences
        self.counts = {"rules": DecayingCounts(counts)}

    def current(self):
        return self.counts["rules"].values()

    def minibatch(self, ids):
        grammar = self.data.grammar
        tables = make_tables(grammar, self.rows.table(MEAN, self.current()))
        sub = self.data.batch.take(ids)
        counts, log_z = expected_counts(grammar, tables, sub)
        if np.any(log_z == -np.inf):
            self.data.raise_bad(int(ids[np.flatnonzero(log_z == -np.inf)[0]]))
        return Minibatch([("rules", slice(None), counts, self.n_units / ids.shape[0])], float(log_z.sum()),
                         int(sub.offsets[-1]))


def cvi_state(rows: RuleRows, data: TreeCorpus, counts, local):
    """The kernels' CVI state (models/pcfg_kernels.py) of the sentences of ``data`` at their cells' local
    counts ``local`` (float32) and the global ``counts`` (R,), whose row totals it adds up."""
    grammar = data.grammar
    n = grammar.kernel.n_symbols
    outer = np.zeros((n, n * n)) if grammar.kernel.dense else np.zeros((0, 0))
    kernel_rows = (counts, rows.totals(counts), grammar.rule_parent, rows.alpha, rows.row_prior,
                   shared_rules(grammar.kernel), np.zeros(grammar.n_rules))
    return (data.kernel_sentences(), kernel_rows, local, np.zeros(grammar.n_rules), outer,
            chart_buffers(grammar.kernel, int(max(data.lengths.max(), 1))), np.zeros((0, 0, 0)))


class CollapsedTrees:
    """CVI's state (eq. 4.17-4.24): every sentence's expected rule counts at its cells (float32) and
    the global counts they sum to; `sweep` is one `schedules.leave_one_out` pass."""

    def __init__(self, rows: RuleRows, data: TreeCorpus, start_table, checkpoint):
        grammar = data.grammar
        kernel_sentences = data.kernel_sentences()
        cell_offsets, cell_rules = kernel_sentences[5], kernel_sentences[6]
        b = data.batch
        self.local = np.zeros(cell_rules.shape[0], dtype=np.float32)
        log_z = local_expected_counts(grammar.kernel, make_tables(grammar, start_table), b.tokens, b.offsets,
                                      b.span_ids, b.span_offsets, cell_offsets, cell_rules, data.chunks,
                                      grammar.n_rules, self.local)
        data.raise_if_bad(log_z)
        self.counts = np.bincount(cell_rules, weights=self.local.astype(np.float64), minlength=grammar.n_rules)
        self.data = data
        self.state = cvi_state(rows, data, self.counts, self.local)
        self.row_totals = self.state[1][1]
        self.order = np.arange(data.n_sentences, dtype=np.int64)
        self.memory_bytes = self.local.nbytes + cell_rules.nbytes + cell_offsets.nbytes
        # the global counts and row totals, every sentence's local counts, the kernels' rule scratch
        checkpoint.track_arrays("cvi", {"counts": self.counts, "rows": self.row_totals, "local": self.local,
                                        "scratch": self.state[1][6]})

    def sweep(self, iteration):
        objective, bad = cvi_pass(self.state, self.order)
        self.data.raise_bad(bad)
        return objective

    def current(self):
        return self.counts

    def attributes(self):
        return {"local_memory_bytes_": self.memory_bytes}


class TreeSampler:
    """The MH sampler's state (eq. 4.13-4.16): the current tree of every sentence as global rule ids in
    preorder (a leftmost derivation: the ids identify the tree), the counts of all of them, and the
    tally of accepted proposals; `sweep` is one `schedules.gibbs` pass, pass i at temperature
    ``temperatures[i]``, whose objective is log p(x, z | alpha) (eq. 4.13)."""

    def __init__(self, rows: RuleRows, data: TreeCorpus, start_table, temperatures=None, checkpoint=NO_CHECKPOINT):
        grammar = data.grammar
        kernel = grammar.kernel
        has_unary = kernel.unary_parent.shape[0] > 0
        nodes = np.maximum(2 * data.lengths - 1, 1)
        # a tree without unary rules has at most 2T - 1 rules; unary chains are simple paths
        room = nodes * (kernel.n_symbols + 1) if has_unary else nodes
        self.tree_offsets = np.zeros(data.n_sentences + 1, dtype=np.int64)
        np.cumsum(room, out=self.tree_offsets[1:])
        self.tree_rules = np.zeros(self.tree_offsets[-1], dtype=np.int64)
        self.tree_sizes = np.zeros(data.n_sentences, dtype=np.int64)
        longest = int(max(data.lengths.max(), 1))
        proposal_rows = max(2 * longest - 1, 1) * (kernel.n_symbols + 1) * (8 if has_unary else 1)
        self.proposal = np.empty((proposal_rows, 5), dtype=np.int64)
        self.buffers = chart_buffers(kernel, longest)
        self.counts = np.zeros(grammar.n_rules)
        kernel_sentences = data.kernel_sentences()
        bad = start_trees(kernel_sentences, make_tables(grammar, start_table), self.tree_offsets, self.tree_rules,
                          self.tree_sizes, self.proposal, self.buffers, self.counts)
        data.raise_bad(bad)
        self.row_totals = rows.totals(self.counts)
        self.tally = np.zeros(3, dtype=np.int64)      # accepted, proposed, moved (accepted and new)
        kernel_rows = (self.counts, self.row_totals, grammar.rule_parent, rows.alpha, rows.row_prior,
                       shared_rules(kernel), np.zeros(grammar.n_rules))
        self.state = (kernel_sentences, kernel_rows, self.tree_offsets, self.tree_rules, self.tree_sizes,
                      self.proposal, self.buffers, self.tally)
        self.data = data
        self.rows = rows
        self.order = np.arange(data.n_sentences, dtype=np.int64)
        self.temperatures = temperatures
        self.rates = []
        checkpoint.track_arrays("mh", {"counts": self.counts, "rows": self.row_totals, "trees": self.tree_rules,
                                       "sizes": self.tree_sizes, "tally": self.tally})
        checkpoint.track("rates", lambda: list(self.rates), lambda saved: self.rates.__setitem__(slice(None), saved))

    def draw(self, power=1.0):
        """One MH pass with the proposals and the target raised to ``power``; returns its acceptance rate."""
        before = self.tally.copy()
        bad = mh_pass(self.state, self.order, float(power))
        self.data.raise_bad(bad)
        accepted, proposed, _ = self.tally - before
        return accepted / max(proposed, 1)

    def sweep(self, iteration):
        """Pass ``iteration`` at its temperature, whose acceptance rate joins ``rates``; returns
        log p(x, z | alpha)."""
        self.rates.append(self.draw(1.0 / self.temperatures[iteration]))
        return self.rows.log_marginal(self.counts)

    def current(self):
        return self.counts

    def attributes(self):
        tally = self.tally
        return {"acceptance_rates_": np.array(self.rates), "acceptance_rate_": tally[0] / max(tally[1], 1),
                "move_rate_": tally[2] / max(tally[1], 1)}

    def trees(self):
        """The current tree of every sentence: a tuple of global rule ids in preorder."""
        return [tuple(self.tree_rules[begin:begin + size])
                for begin, size in zip(self.tree_offsets[:-1], self.tree_sizes)]


# ------------------------------------------------------------------ the model
class PCFG(BayesModel):
    """Probabilistic context-free grammar with symmetric Dirichlet priors on its rule rows (eq. 4.1-4.2).

    Parameters
    ----------
    n_nonterminals : int, optional
        Grammar induction: every rule A -> B C over this many nonterminals and every A -> w over the
        training vocabulary (thesis §4.2); nonterminal "0" is the start symbol.
    grammar : Grammar, str or os.PathLike, optional
        A hand-written grammar: a `Grammar`, grammar text (it contains ``->``) or a file in the format
        of `cvbayes.trees.parse_grammar` (``<any>`` for "any substring of the input").  Rule weights
        written in it are ignored by learning.  Give exactly one of `n_nonterminals` and `grammar`.
    alpha : float
        The symmetric Dirichlet concentration of every row.
    max_substring : int, optional
        Longest substring an ``<any>`` rule without its own ``<any:m>`` may rewrite to.
    algorithm : {"em", "vb", "cvi", "scvi", "mh", "cvi-sharded"}
        See `ALGORITHMS`; default "cvi".
    n_iter : int
        Passes over the data (scvi: n_sentences / batch_size minibatch steps each).
    n_init : int
        Restarts from seeds random_state, random_state + 1, ...; the one with the best final objective
        is kept.
    random_state : int
        Seeds the random start and, for mh and scvi, the draws.  em, vb, cvi and scvi start from the
        expected counts under `random_table`; mh from one tree a sentence drawn uniformly
        (`uniform_tree_table`).
    init : "random" or array (R,)
        A rule table to start from instead (rule ids of `compile`): its expected counts, or for mh
        one tree a sentence drawn from it.
    batch_size, kappa, tau0 : scvi only
        Sentences a minibatch (drawn with replacement) and step sizes rho_m = (tau0 + m)^-kappa.
    anneal : bool
        mh only: temperature from 2.0 down to 1.0 geometrically over the iterations (the
        proposals and the target raised to 1 / temperature).  Off by default, as in the thesis's
        Fig. 4.1 (footnote 2).

    ``fit(X, terminals_from=None, ...)`` takes a list of token lists (str) or a Corpus with a vocabulary,
    and besides `BayesModel.fit`'s arguments

    terminals_from : list of token lists, optional
        More sentences whose tokens and substrings become terminals (with no counts), so that
        `score` and `parse` can handle them: Johnson et al. (2007) and thesis §4.5.1 take the
        ``<any>`` terminals from the whole corpus, held-out words included.
    client : dask.distributed.Client, optional
        em, vb and cvi-sharded on the client's workers, each on its shard of whole sentences,
        memory-mapped from a file saved once (`cvbayes.models.tree_shards`): em and vb are the same run
        as in one process up to the order of the sums; cvi-sharded is CVI with the other shards' counts
        one pass stale.  Needs ``cvbayes[distributed]``.
    n_shards, shard_folder : optional
        How many shards and the folder they are kept in (`cvbayes.models.shards.Sharding`); n_shards
        without a client runs cvi-sharded on that many threads of this process.

    Attributes
    ----------
    grammar_ : CompiledGrammar
        The grammar learnt: rule ``r`` is ``grammar_.describe(r)``.
    counts_ : (R,) expected (or, for mh, sampled) rule counts of the fit.
    rule_probs_ : (R,) rule probabilities: MAP (eq. 4.10) for em, the posterior mean
        (C_r + alpha) / (C_A. + |R_A| alpha) otherwise.
    history_ : list of IterationRecord; ``objective_name_`` says what the objective is.
    acceptance_rates_ : (n_iter,) mh only: the share of proposals accepted in every pass;
        ``acceptance_rate_`` over the whole fit; ``move_rate_`` the share of proposals accepted and
        different from the current tree (a proposal equal to it is always accepted).
    local_memory_bytes_ : cvi only: the float32 local statistics and their cell ids.
    restart_objectives_ : the final objective of every restart (``n_init``).
    shard_timings_ : on shards, a `cvbayes.models.shards.PassTiming` a pass (compute seconds per shard,
        bytes sent and returned, broadcast, reduction and scheduler overhead).
    """

    MODEL_NAME = "pcfg"
    ALGORITHMS = ALGORITHMS
    OBJECTIVES = OBJECTIVES
    FIT_OPTIONS = ("terminals_from", "client", "n_shards", "shard_folder")

    def __init__(self, n_nonterminals=None, grammar=None, alpha=0.1, max_substring=None, *, algorithm="cvi",
                 n_iter=50, n_init=1, random_state=0, init="random", batch_size=100, kappa=0.5, tau0=1.0,
                 anneal=False):
        self._keep_params(locals())
        if (n_nonterminals is None) == (grammar is None):
            raise ValueError("give exactly one of n_nonterminals and grammar")
        if n_nonterminals is not None:
            self.n_nonterminals = check_positive_int("n_nonterminals", n_nonterminals)
        check_prior("alpha", alpha)
        if max_substring is not None:
            self.max_substring = check_positive_int("max_substring", max_substring)
        self._check_learner("n_iter", "n_init", "batch_size")
        if not 0.0 <= kappa <= 1.0:
            raise ValueError(f"kappa must lie in [0, 1], got {kappa}")
        if not tau0 >= 1.0:
            raise ValueError(f"tau0 must be at least 1 so that every step size is at most 1, got {tau0}")
        if isinstance(init, str) and init != "random":
            raise ValueError("init must be 'random' or an array of rule weights")
        self.grammar = None if grammar is None else _as_grammar(grammar)
        self.alpha = float(alpha)

    # ------------------------------------------------------------- grammar
    def compile(self, X, terminals_from=None) -> CompiledGrammar:
        """The compiled grammar `fit` would learn on X: its rule ids are those of ``counts_``.

        Terminals are the hand grammar's quoted ones, then the tokens of X and of `terminals_from` in
        order of first appearance (id 0 is ``<unk>``); the ``<any>`` rules' terminals are the distinct
        substrings of X and `terminals_from`.
        """
        sentences = _as_sentences(X) + (_as_sentences(terminals_from, "terminals_from") if terminals_from else [])
        if self.grammar is not None:
            return compile_grammar(self.grammar, sentences, max_substring=self.max_substring)
        vocabulary = Vocabulary(list(dict.fromkeys(w for s in sentences for w in s if w != "<unk>")))
        return full_cnf_grammar(self.n_nonterminals, vocabulary)

    # ------------------------------------------------------------- fit's hooks
    def _prepare(self, X, y=None, terminals_from=None, client=None, n_shards=None, shard_folder=None):
        """The sentences laid out for the tree kernels under the grammar compiled for them, with fit's
        shard options."""
        sharding = Sharding.checked(self.algorithm, client, n_shards, shard_folder, SHARDED_ALGORITHMS,
                                    ("cvi-sharded",))
        sentences = _as_sentences(X)
        grammar = self.compile(sentences, terminals_from)
        if not isinstance(self.init, str):
            _check_table(grammar, self.init)
        self.grammar_ = grammar
        self._rows = RuleRows(grammar, self.alpha)
        return TreeCorpus(grammar, sentences, sharding)

    def _fingerprint(self, data):
        grammar = data.grammar
        rules_text = "\n".join(map(grammar.describe, range(grammar.n_rules))).encode()
        return data.batch.tokens, data.batch.offsets, data.batch.span_ids, np.frombuffer(rules_text, np.uint8)

    def _start(self, data, run):
        """The rule table a run starts from: ``init``, or for mh the uniform tree table (its draws differ
        by the seed, numba's generator), or `random_table` of the run's seed."""
        if not isinstance(self.init, str):
            return _check_table(data.grammar, self.init)
        if run.how.schedule is gibbs:
            return uniform_tree_table(data.grammar)
        return random_table(data.grammar, np.random.default_rng(run.seed))

    def _batch(self, data, run):
        """EM (rule MAP) and VB (rule VB) (eq. 4.5-4.12), from the expected counts under the start table;
        the E-step on the shards of a client with one (`cvbayes.models.tree_shards`)."""
        structure = BatchTrees(self._rows, data)
        start = self._start(data, run)
        tables = (start, make_tables(data.grammar, start))
        if data.sharding.client is None:
            return structure, structure.expectations(tables)[0], None
        structure = pcfg_batch(structure, data.sharding, self._fingerprint(data))
        return structure, structure.expectations(tables, start=True)[0], None

    def _collapsed(self, data, run):
        """CVI (eq. 4.24), each sentence starting from its expected counts under the start table;
        cvi-sharded on shards of sentences (threads of this process, or a client's workers;
        `cvbayes.models.tree_shards`)."""
        if run.algorithm != "cvi-sharded":
            return CollapsedTrees(self._rows, data, self._start(data, run), run.checkpoint)
        if run.checkpoint is not NO_CHECKPOINT:
            raise ValueError("algorithm 'cvi-sharded' does not take checkpoints yet (its shards' local statistics "
                             "are not saved); fit it without checkpoint=")
        collapsed = CollapsedTrees(self._rows, data, self._start(data, run), NO_CHECKPOINT)
        shards = data.sharding.shards(Corpus(data.batch.tokens, data.batch.offsets), data.grammar,
                                      self._fingerprint(data))
        return pcfg_cvi(collapsed, self.alpha, shards)

    def _sampler(self, data, run):
        """The MH sampler (eq. 4.13-4.16), each sentence starting from a tree drawn from the start table."""
        n_iter = run.n_iter
        temperatures = np.geomspace(2.0, 1.0, n_iter) if self.anneal and n_iter > 1 else np.ones(n_iter)
        return TreeSampler(self._rows, data, self._start(data, run), temperatures, run.checkpoint)

    def _stochastic(self, data, run):
        """SCVI: minibatches of sentences under MEAN tables of the global counts, which start as the
        expected counts under the start table."""
        start = self._start(data, run)
        counts = BatchTrees(self._rows, data).expectations((start, make_tables(data.grammar, start)))[0]
        return TreeMinibatches(self._rows, data, counts)

    def _set_fitted(self, counts, rule, data=None):
        """Store the counts and the point estimate: MAP for em, the posterior mean otherwise."""
        self.counts_ = np.asarray(counts, dtype=float)
        self._point_rule = MAP if rule == MAP else MEAN
        self.rule_probs_ = self._rows.table(self._point_rule, self.counts_)
        self._tables = make_tables(self.grammar_, self.rule_probs_)

    # ------------------------------------------------------------- using it
    def _prepared(self, X):
        self._check_fitted()
        sentences = _as_sentences(X)
        return sentences, self.grammar_.prepare(sentences)

    def _estimate_tables(self, estimate):
        """The kernel tables of `rule_probs_` ("fitted") or of the posterior mean of ``counts_`` ("mean")."""
        if estimate not in ("fitted", "mean"):
            raise ValueError(f"estimate must be 'fitted' or 'mean', got {estimate!r}")
        if estimate == "fitted":
            return self._tables
        return make_tables(self.grammar_, self._rows.table(MEAN, self.counts_))

    def score_sentences(self, X, estimate="fitted") -> np.ndarray:
        """log p(x^i) of every sentence (-inf: no tree, e.g. an ``<any>`` substring never seen: pass
        held-out sentences as ``terminals_from`` to `fit`).

        ``estimate="fitted"`` scores under `rule_probs_` (the MAP estimate for em, the posterior mean
        otherwise); ``"mean"`` under the posterior mean (C_r + alpha) / (C_A. + |R_A| alpha) of
        ``counts_`` whatever the algorithm, which for em smooths its expected counts by alpha (an MLE
        gives unseen rules probability zero).
        """
        _, prepared = self._prepared(X)
        tables = self._estimate_tables(estimate)
        kernel = self.grammar_.kernel
        return batch_log_z(kernel, tables, prepared.tokens, prepared.offsets, prepared.span_ids,
                           prepared.span_offsets, chart_chunks(kernel, prepared.offsets))

    def score(self, X, estimate="fitted") -> float:
        """Total held-out log-likelihood under the posterior mean (em: the MAP estimate); see
        `score_sentences`."""
        return float(self.score_sentences(X, estimate).sum())

    def parse(self, X, estimate="fitted") -> list:
        """The Viterbi (CKY) tree of every sentence, as `cvbayes.data.trees.Tree` (the user's n-ary
        rules, binarisation undone); None for a sentence without a tree.

        ``estimate`` as in `score_sentences`: under `rule_probs_` ("fitted") or the posterior mean of
        ``counts_`` ("mean"; differs only for em, whose MLE gives every unseen rule probability zero and
        so forces held-out words into analyses made of seen pieces).
        """
        sentences, prepared = self._prepared(X)
        derivations = viterbi_batch(self.grammar_, self._estimate_tables(estimate), prepared)
        return [None if d is None else derivation_to_tree(self.grammar_, d, words)
                for d, words in zip(derivations, sentences)]

    # ------------------------------------------------------------- save/load
    def _saved(self):
        """The counts, the prior, the grammar (text, or the number of nonterminals), its terminals and
        ``<any>`` substrings."""
        grammar = self.grammar_
        meta = {"alpha": self.alpha, "n_nonterminals": self.n_nonterminals,
                "grammar": None if self.grammar is None else format_grammar(self.grammar),
                "start": None if self.grammar is None else self.grammar.start, "max_substring": self.max_substring,
                "vocabulary": grammar.vocabulary.to_json(), "point_rule": self._point_rule}
        arrays = {"counts": self.counts_}
        if grammar.substrings is not None:
            substrings = grammar.substrings.substrings
            arrays["substring_offsets"] = np.cumsum([0] + [len(s) for s in substrings]).astype(np.int64)
            arrays["substring_tokens"] = np.array([t for s in substrings for t in s], dtype=np.int32)
        if hasattr(self, "acceptance_rates_"):
            arrays["acceptance_rates"] = self.acceptance_rates_
        return meta, arrays

    @classmethod
    def _from_saved(cls, meta, arrays, path):
        vocabulary = Vocabulary.from_json(meta["vocabulary"])
        if meta["grammar"] is None:
            model = cls(n_nonterminals=meta["n_nonterminals"], alpha=meta["alpha"])
            grammar = full_cnf_grammar(model.n_nonterminals, vocabulary)
        else:
            model = cls(grammar=parse_grammar(meta["grammar"], start=meta["start"]), alpha=meta["alpha"],
                        max_substring=meta["max_substring"])
            substrings = None
            if "substring_offsets" in arrays:
                offsets, tokens = arrays["substring_offsets"], arrays["substring_tokens"]
                substrings = [tokens[offsets[i]:offsets[i + 1]] for i in range(offsets.shape[0] - 1)]
            # listed by length, each length in first-appearance order, the substrings index back to the same ids
            grammar = compile_grammar(model.grammar, substrings, vocabulary=vocabulary,
                                      max_substring=model.max_substring)
            if substrings is not None and [tuple(map(int, s)) for s in substrings] != grammar.substrings.substrings:
                raise ValueError(f"{path}: the stored substrings do not index back to their ids")
        if grammar.n_rules != arrays["counts"].shape[0]:
            raise ValueError(f"{path}: {arrays['counts'].shape[0]} counts for a grammar of {grammar.n_rules} rules")
        model.grammar_ = grammar
        model._rows = RuleRows(grammar, model.alpha)
        if "acceptance_rates" in arrays:
            model.acceptance_rates_ = arrays["acceptance_rates"]
        model._set_fitted(arrays["counts"], meta["point_rule"])
        return model


# ------------------------------------------------------------------ input checks
def _as_grammar(grammar) -> Grammar:
    if isinstance(grammar, Grammar):
        return grammar
    if isinstance(grammar, str) and ("->" in grammar or "\n" in grammar):
        return parse_grammar(grammar)
    if isinstance(grammar, str | os.PathLike):
        return read_grammar(grammar)
    raise TypeError(f"grammar must be a Grammar, grammar text or a path, got {type(grammar).__name__}")


def _as_sentences(X, name="X") -> list:
    """Sentences as lists of str tokens, from a list of token lists or a Corpus with a vocabulary."""
    if isinstance(X, Corpus):
        if X.vocabulary is None or not X.is_discrete:
            raise ValueError(f"{name}: a Corpus needs token ids and a vocabulary")
        return [X.vocabulary.decode(sequence) for sequence in X]
    if isinstance(X, str) or not hasattr(X, "__len__"):
        raise TypeError(f"{name} must be a list of token lists or a Corpus, got {type(X).__name__}")
    sentences = []
    for i, sentence in enumerate(X):
        if isinstance(sentence, str):
            raise TypeError(f"{name}: sentence {i} is a str; give each sentence as a list of tokens")
        tokens = list(sentence)
        if not tokens:
            raise ValueError(f"{name}: sentence {i} is empty")
        for j, token in enumerate(tokens):
            if not isinstance(token, str) or not token:
                raise TypeError(f"{name}: sentence {i}, token {j} is {token!r}; tokens must be non-empty str")
        sentences.append(tokens)
    if not sentences:
        raise ValueError(f"{name} has no sentences")
    return sentences


def _check_table(grammar: CompiledGrammar, table) -> np.ndarray:
    table = np.asarray(table, dtype=float)
    if table.shape != (grammar.n_rules,):
        raise ValueError(f"init must have one weight a rule ({grammar.n_rules}), got shape {table.shape}")
    if not (np.all(np.isfinite(table)) and table.min() >= 0.0):
        raise ValueError("init weights must be finite and non-negative")
    return table
