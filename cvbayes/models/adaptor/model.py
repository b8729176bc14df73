"""`AdaptorGrammar`: the model users build, fit, save, load and segment with (module notes of
`cvbayes.models.adaptor`), a `cvbayes.BayesModel`: its fit is the shared driver
(`cvbayes.schedules.driver`), which runs the learner of ``algorithm`` (`ALGORITHMS`) on its schedule,
with restarts, checkpoints, progress and callbacks; save and load are `cvbayes.models.files.Persistent`'s.
"""
from __future__ import annotations

import json
import warnings
from typing import NamedTuple

import numpy as np

from ...core.rules import MEAN, VB, check_prior
from ...metrics.segmentation import segmentation_scores
from ...schedules import Algorithm, batch, gibbs, leave_one_out
from ...trees.grammar import AnySubstring, SentenceBatch, Terminal
from ...trees.inside_outside import batch_log_z, chart_chunks, make_tables
from ..base import BayesModel
from ..shards import Sharding
from .cvi import CollapsedVariational
from .decode import Decoder, PortableWeights
from .grammar import as_spec, parse_adaptor_grammar, spec_text
from .kernels import PREDICTIVES
from .layout import RuleLayout, Training, compile_adaptor, utterance_types
from .sampler import MetropolisHastings
from .sharded import vb_batch
from .vb import VariationalBayes

ALGORITHMS = {
    "vb": Algorithm(batch, VB, "utterance type", "Cohen, Blei and Smith 2010"),
    "cvi": Algorithm(leave_one_out, MEAN, "utterance or utterance type (unit=)",
                     "collapsed VI of the PY restaurants (module notes of cvbayes.models.adaptor)"),
    "mcmc": Algorithm(gibbs, MEAN, "utterance", "Johnson, Griffiths and Goldwater 2007"),
}
OBJECTIVES = {
    "vb": "evidence lower bound of q(theta) q(v) over the truncated sticks (Cohen, Blei and Smith 2010)",
    "cvi": "sum over the units of the log leave-one-out predictive of the unit's parses",
    "mcmc": "log p(trees, seating) of the current sample",
}
LEARNERS = {"vb": VariationalBayes, "cvi": CollapsedVariational, "mcmc": MetropolisHastings}
# what fit(client=...) runs (cvbayes.models.adaptor.sharded)
SHARDED_ALGORITHMS = ("vb",)


class Utterances(NamedTuple):
    """The training utterances and the grammar compiled over them (once a fit, for every restart), with
    fit's shard options."""

    utterances: list
    compiled: object
    layout: RuleLayout
    batch: SentenceBatch
    sharding: Sharding = Sharding()


def as_utterances(X) -> list:
    """Utterances as lists of symbols (a str utterance is its characters); checks they are non-empty."""
    if isinstance(X, str):
        raise TypeError("utterances must be a list of symbol sequences, not one string")
    out = []
    for i, utterance in enumerate(X):
        symbols = list(utterance)
        if not symbols:
            raise ValueError(f"utterance {i} is empty")
        if not all(isinstance(s, str) and s for s in symbols):
            raise TypeError(f"utterance {i}: symbols must be non-empty strings")
        out.append(symbols)
    if not out:
        raise ValueError("no utterances")
    return out


def restart_agreement(segmentations) -> list[float]:
    """Each restart's mean boundary F1 against every other restart's segmentation of the same utterances.

    The rule ``n_init`` keeps the restart that agrees most (the medoid, ties to the higher objective).  On
    2,000 Brent utterances, 8 VB starts of the unigram grammar: the one with the highest ELBO had token F1
    0.443 (rank correlation of ELBO and F1 0.05), the highest held-out likelihood 0.443 (-0.64), the medoid
    0.517 (0.79); the starts ranged over 0.44-0.59.  Likelihoods prefer the undersegmenting starts."""
    out = []
    for i, mine in enumerate(segmentations):
        others = [segmentation_scores(mine, theirs).boundary.f1 for j, theirs in enumerate(segmentations) if j != i]
        out.append(float(np.mean(others)) if others else 0.0)
    return out


class AdaptorGrammar(BayesModel):
    """A Pitman-Yor adaptor grammar learned by VB, collapsed VI or MCMC (module notes).

    Parameters
    ----------
    grammar : str or AdaptorGrammarSpec
        Grammar text, a file name, or a built-in name: ``"unigram"``, ``"colloc"``, ``"colloc-syllable"``
        (over Brent's phonemes; `syllable_grammar` builds it over other vowels and consonants).
    a : float, default 0.0
        PY discount of the adapted nonterminals that do not set their own.
    b : float, default 1.0
        PY concentration of the adapted nonterminals that do not set their own.
    alpha : float, default 1.0
        Symmetric Dirichlet pseudo-count of every base rule.
    truncation : int, default 10000
        VB's stick-breaking truncation K (grammaton size) per adapted nonterminal.
    word : str, default "Word"
        The nonterminal whose yields are words (`segment`, `lexicon_`).
    estimate_hyperparameters : bool, default False
        Learn every adapted nonterminal's discount a and concentration b after each pass, as the reference
        systems do (Johnson and Goldwater 2009); as in Johnson's py-cfg, a nonterminal whose a starts at 0
        stays a Dirichlet process and only its b is learned (start a above 0, e.g. ``a=0.5``, to learn it).
        mcmc samples them (slice sampling under a ~ Beta(1, 1), b ~ Gamma(shape 0.01, scale 100),
        `cvbayes.models.adaptor.hyperparameters.resample_py_parameters`); cvi and vb maximise (empirical
        Bayes): cvi the Pitman-Yor probability of the expected seating,
        sum_{i=1}^{T-1} log(b + i a) - log Gamma(b + n) + log Gamma(b + 1)
        + sum_s t_s (log Gamma(n_s / t_s - a) - log Gamma(1 - a)) (Pitman and Yor 1997's exchangeable
        partition probability with yield s's n_s expected customers spread evenly over its t_s expected
        tables, T = sum_s t_s real-valued through Gamma functions), vb E_q[log p(v | a, b)] of its sticks.
    init : {"sample", "empty"}, optional
        The start (module notes).  "sample": each utterance's tree drawn from the predictive of those before it
        (`cvbayes.models.adaptor.sampler.Sampler.initialise`), VB's q(theta) and q(v) from their counts, CVI's
        local statistics their indicators; "empty": VB's first E-step under the prior, CVI's first pass
        adding the units one by one with the first-order predictive.  Default: "empty" for cvi (a sampled
        start is degenerate for its predictive), "sample" for vb (from the prior VB finds token F1 0.27
        against 0.44-0.59 on 2,000 Brent utterances) and mcmc.
    unit : {"type", "utterance"}, default "type"
        cvi: the unit left out and put back, an utterance or all the copies of an utterance at once.
    predictive : {"zero-exact", "second-order", "first-order"}, default "zero-exact"
        cvi: the cache's leave-one-out predictive, E[log(n_s - a t_s + theta')] with the case n_s = 0 exact,
        with the second-order term as well, or the first-order step alone (module notes).
    anneal : (float, int), optional
        mcmc only: (start temperature T0, sweeps): the first sweeps target p(tree | others)^(1/T) with
        1/T rising geometrically from 1/T0 to 1 (Johnson's py-cfg schedule, `annealing_temperature`).
    resample_tables : bool, default False
        mcmc only: after each sweep's utterance steps, resample the content of every table of every adapted
        nonterminal once, in a random order (Johnson's table-label move, py-cfg's ``-R -1``; Johnson and
        Goldwater 2009; `cvbayes.models.adaptor.sampler.Sampler.relabel`): a cached collocation can then
        change the words it was opened with.
    algorithm : {"vb", "cvi", "mcmc"}, default "cvi"
        `ALGORITHMS`: vb on the batch schedule, cvi on the leave-one-out one, mcmc's sweeps as a sampler's.
    n_iter : int, default 20
        Passes (sweeps) over the utterances (at least 1).
    random_state : int, default 0
        The start's draws (``init="sample"``); CVI and MCMC visit the utterances in a fresh random order
        every pass; MCMC's draws.
    n_init : int, default 1
        Restarts from seeds random_state, ..., random_state + n_init - 1 (scikit-learn's ``n_init``); the model
        keeps the one whose segmentation of the training utterances agrees most with the others'
        (`restart_agreement`): the final objective (VB's ELBO, CVI's summed log predictive, MCMC's
        log p(trees, seating)) prefers undersegmentations (`_best_restart`).  ``restart_objectives_`` and
        ``restart_agreement_`` hold every restart's.

    ``fit(X, progress=, callback=, checkpoint=, checkpoint_every=)`` is `cvbayes.BayesModel.fit`: a fit
    with ``checkpoint`` resumes bit for bit (`cvbayes.checkpoints`; the learner's state, its generator and
    the learned a and b are saved).  Besides those, ``fit`` takes

    client : dask.distributed.Client, optional
        vb: run every E-step on the client's workers, each on its shard of whole utterance types,
        memory-mapped from a file saved once (`cvbayes.models.adaptor.sharded`); q is updated here.  The
        same run as in one process up to the order of the sums.  Needs ``cvbayes[distributed]``.
    n_shards, shard_folder : optional
        How many shards and the folder they are kept in (`cvbayes.models.shards.Sharding`).

    Attributes (after fit)
    ----------------------
    history_ : list of IterationRecord
    lexicon_ : dict of tuple of str to float
        Expected customers (token counts) of each yield of ``word`` with at least 0.01 of them.
    rule_weights_ : ndarray (R,)
        The weights `segment` parses with (over ``grammar_``): the predictive of the final counts
        (cvi, mcmc) or VB's exp E[log .] weights.  Not saved: a loaded model has the weights by yield.
    grammar_ : CompiledGrammar
        The grammar compiled over the training utterances.
    concentration, discount : ndarray (M,)
        Each adapted nonterminal's PY b and a (as learned with ``estimate_hyperparameters``).
    restart_objectives_ : list of float
        Every restart's final objective (the run's own with ``n_init=1``).
    learner_ : VariationalBayes, CollapsedVariational or MetropolisHastings
        The learner's final state (q, the expected counts, or the sampler's restaurants), for inspection;
        not saved.
    shard_timings_ : list of PassTiming
        vb with a client: a `cvbayes.models.shards.PassTiming` a pass (compute seconds per shard, bytes sent
        and returned, broadcast, reduction and scheduler overhead).
    segmentation_ : list of list of tuple of str
        mcmc only: the words of the current sample's trees of the training utterances.
    acceptance_rate_ : float
        mcmc only: the share of accepted MH proposals.
    """

    MODEL_NAME = "adaptor-grammar"
    ALGORITHMS = ALGORITHMS
    OBJECTIVES = OBJECTIVES
    FITTED = "lexicon_"
    FIT_OPTIONS = ("client", "n_shards", "shard_folder")
    INITS = ("sample", "empty")
    # each learner's start when ``init`` is None (module notes of vb and cvi say why)
    DEFAULT_INIT = {"vb": "sample", "cvi": "empty", "mcmc": "sample"}
    UNITS = ("utterance", "type")

    def __init__(self, grammar="unigram", a=0.0, b=1.0, alpha=1.0, truncation=10000, word="Word",
                 estimate_hyperparameters=False, init=None, unit="type", predictive="zero-exact", anneal=None,
                 resample_tables=False, algorithm="cvi", n_iter=20, random_state=0, n_init=1):
        self._keep_params(locals())
        self._validate()

    def _validate(self):
        """Check the parameters and derive the spec and the PY parameters from them."""
        self.spec = as_spec(self.grammar)
        if not 0.0 <= self.a < 1.0:
            raise ValueError(f"a (the PY discount) must be in [0, 1), got {self.a}")
        if not self.b > -self.a:
            raise ValueError(f"b (the PY concentration) must exceed -a, got {self.b}")
        check_prior("alpha", self.alpha)
        if int(self.truncation) < 1:
            raise ValueError(f"truncation must be a positive integer, got {self.truncation}")
        if self.word not in self.spec.grammar.nonterminals:
            raise ValueError(f"the grammar has no nonterminal {self.word!r} (the word level); pass word=...")
        for name, value, choices in (("init", self.init, self.INITS + (None,)), ("unit", self.unit, self.UNITS),
                                     ("predictive", self.predictive, tuple(PREDICTIVES))):
            if value not in choices:
                raise ValueError(f"unknown {name} {value!r}; choose one of {', '.join(c for c in choices if c)}")
        anneal = self.anneal
        if anneal is not None and not (len(anneal) == 2 and anneal[0] >= 1.0 and int(anneal[1]) >= 1):
            raise ValueError(f"anneal must be (start temperature >= 1, sweeps >= 1), got {anneal!r}")
        self.resample_tables = bool(self.resample_tables)
        if self.resample_tables and self.algorithm != "mcmc":
            raise ValueError(f"resample_tables is the sampler's move: it needs algorithm='mcmc', not "
                             f"{self.algorithm!r}")
        self._check_learner("n_iter", "n_init")
        self.a, self.b, self.alpha, self.truncation = float(self.a), float(self.b), float(self.alpha), int(self.truncation)
        self.estimate_hyperparameters = bool(self.estimate_hyperparameters)
        self.adapted_names = tuple(self.spec.adapted)
        self._reset_py_parameters()

    def _reset_py_parameters(self):
        """discount (M,) and concentration (M,): each adapted nonterminal's own, else the model's a and b."""
        written = [self.spec.adapted[name] for name in self.adapted_names]
        self.discount = np.array([self.a if a is None else a for a, _ in written])
        self.concentration = np.array([self.b if b is None else b for _, b in written])
        if np.any(self.concentration <= -self.discount):
            raise ValueError("every PY concentration b must exceed -a")

    # ------------------------------------------------------------- fit's hooks (cvbayes.schedules.driver)
    def _prepare(self, X, y=None, client=None, n_shards=None, shard_folder=None):
        """The utterances checked and the grammar compiled over them, with fit's shard options."""
        sharding = Sharding.checked(self.algorithm, client, n_shards, shard_folder, SHARDED_ALGORITHMS)
        utterances = as_utterances(X)
        unknown_symbol = self.underivable_symbol(utterances)
        if unknown_symbol is not None:
            raise ValueError(f"utterance {unknown_symbol[0]} has the symbol {unknown_symbol[1]!r}, which is not a "
                             f"terminal of the grammar (its terminals: {self.terminals_text()})")
        compiled, layout = compile_adaptor(self.spec, self.alpha, utterances)
        return Utterances(utterances, compiled, layout, compiled.prepare(utterances), sharding)

    def _fingerprint(self, data):
        """The utterances and the grammar's text (with every adapted nonterminal's a and b)."""
        return tuple(np.frombuffer(text.encode(), np.uint8)
                     for text in (json.dumps(data.utterances), spec_text(self.spec)))

    def _learner(self, data, run):
        """The learner of ``run.algorithm`` at its start, from the run's generator; it declares its state to
        ``run.checkpoint``, the model its a and b (which the learners with ``estimate_hyperparameters``
        change)."""
        self._reset_py_parameters()
        init = self.init or self.DEFAULT_INIT[run.algorithm]
        training = Training(self.spec, data.compiled, data.layout, data.batch, data.utterances, self.alpha,
                            self.truncation, init, self.unit, self.predictive, self.anneal,
                            self.resample_tables, self.estimate_hyperparameters, self.discount, self.concentration,
                            self.discount > 0)   # a = 0 stays a Dirichlet process (py-cfg)
        self.grammar_, self._train = data.compiled, data.utterances
        run.checkpoint.track_arrays("py_parameters", {"discount": self.discount, "concentration": self.concentration})
        self.learner_ = LEARNERS[run.algorithm](training, run.rng, run.checkpoint)
        return self.learner_

    def _batch(self, data, run):
        """VB (`VariationalBayes`): its q is the start, the batch schedule's statistics only its E-steps';
        the E-step on the shards of a client with one (`cvbayes.models.adaptor.sharded`)."""
        learner = self._learner(data, run)
        if data.sharding.client is None:
            return learner, None, None
        return vb_batch(learner, data.sharding, self._fingerprint(data)), None, None

    def _collapsed(self, data, run):
        return self._learner(data, run)

    def _sampler(self, data, run):
        return self._learner(data, run)

    def _best_restart(self, runs, objectives, data):
        """The restart whose segmentation agrees most with the others' (`restart_agreement`), ties to the
        higher objective; every run gets ``restart_agreement_``."""
        agreement = restart_agreement([run.segment(data.utterances) for run in runs])
        for run in runs:
            run.restart_agreement_ = agreement
        return max(range(len(runs)), key=lambda r: (agreement[r], objectives[r]))

    def _set_fitted(self, statistics, rule, data):
        """The fitted attributes from the learner's current state (``statistics``, the schedule's, are in
        it)."""
        learner, compiled = self.learner_, self.grammar_
        self.rule_weights_ = learner.weights()
        self._mean_weights = learner.mean_weights() if self.algorithm_ == "vb" else None
        customers = learner.customers()
        self._portable = self._mean_portable = None
        if self.algorithm_ == "mcmc":
            sampler = learner.sampler
            word = compiled.nonterminals.index(self.word)
            self.segmentation_ = [[tuple(u[i:k]) for i, k in spans]
                                  for u, spans in zip(self._train, sampler.words(word))]
            self.acceptance_rate_ = sampler.accepted / max(sampler.proposed, 1)
        lexicon = {}
        if self.word in self.adapted_names:
            kernel = compiled.kernel
            family = int(np.flatnonzero(kernel.span_parent == compiled.nonterminals.index(self.word))[0])
            first, count = kernel.span_base[family], kernel.span_count[family]
            for s in np.flatnonzero(customers[first:first + count] >= 0.01):
                lexicon[tuple(compiled.vocabulary.decode(list(compiled.substrings.substrings[s])))] = float(
                    customers[first + s])
        self.lexicon_ = lexicon
        # the driver replaces it by every restart's when n_init > 1
        self.restart_objectives_ = [self.history_[-1].objective]

    def underivable_symbol(self, utterances):
        """(i, symbol): the first utterance with a symbol the grammar cannot derive, or None.

        Only a grammar without ``<any>`` rules has such symbols (those of no quoted terminal, e.g. a letter
        under the colloc-syllable grammar's Brent phonemes); every algorithm would just find no parse.
        """
        rules = self.spec.grammar.rules
        if any(isinstance(symbol, AnySubstring) for rule in rules for symbol in rule.rhs):
            return None
        terminals = {symbol.text for rule in rules for symbol in rule.rhs if isinstance(symbol, Terminal)}
        for i, utterance in enumerate(utterances):
            for symbol in utterance:
                if symbol not in terminals:
                    return i, symbol
        return None

    def settings(self) -> dict:
        """The model's settings and each adapted nonterminal's PY discount and concentration (learned ones
        after ``fit`` with ``estimate_hyperparameters``), as plain JSON for reports."""
        return {"a": self.a, "b": self.b, "alpha": self.alpha, "truncation": self.truncation,
                "estimate_hyperparameters": self.estimate_hyperparameters,
                "anneal": None if self.anneal is None else list(self.anneal), "resample_tables": self.resample_tables,
                "init": self.init, "unit": self.unit,
                "predictive": self.predictive,
                "discount": self.discount.tolist(), "concentration": self.concentration.tolist()}

    def terminals_text(self) -> str:
        """The grammar's quoted terminals, for error messages."""
        terminals = sorted({symbol.text for rule in self.spec.grammar.rules for symbol in rule.rhs
                            if isinstance(symbol, Terminal)})
        return " ".join(terminals[:60]) + (" ..." if len(terminals) > 60 else "")

    # ------------------------------------------------------------- using it
    def segment(self, utterances) -> list[list[tuple[str, ...]]]:
        """Each utterance's words under the fitted model: the yields of the word nonterminal in its
        most probable parse (CKY on `rule_weights_`).

        A span served by the cache of an adapted nonterminal above the words (a cached ``Colloc``)
        has no inner nodes in the yield-indexed model; its words are those of the best parse of the
        span under that nonterminal's base rules.  Utterances the model cannot parse (a symbol never
        seen in training) come back as one word, with a warning.
        """
        self._check_fitted()
        utterances = as_utterances(utterances)
        if utterances == getattr(self, "_train", None):
            compiled, weights = self.grammar_, self.rule_weights_
        else:
            compiled, _ = compile_adaptor(self.spec, self.alpha, utterances)
            weights = self.portable_weights().on(compiled)
        types = [tuple(utterances[i]) for i in utterance_types(utterances)[0]]
        found = dict(zip(types, Decoder(self.spec, self.word, compiled, weights, utterances).word_spans(
            compiled, weights, [list(t) for t in types])))
        out, failed = [], 0
        for utterance in utterances:
            spans = found[tuple(utterance)]
            if spans is None:
                failed += 1
                spans = [(0, len(utterance))]
            out.append([tuple(utterance[i:k]) for i, k in spans])
        if failed:
            warnings.warn(f"{failed} utterance(s) had no parse and are returned as one word", stacklevel=2)
        return out

    def portable_weights(self, mean=False) -> PortableWeights:
        """The fitted weights by rule and by yield, for another compilation of the grammar (`segment` on new
        utterances, `save`); ``mean``: those `score` takes (VB's posterior mean; the others' are the same)."""
        self._check_fitted()
        if mean and self.algorithm_ == "vb":
            if self._mean_portable is None:
                self._mean_portable = PortableWeights.of(self.grammar_, self._mean_weights)
            return self._mean_portable
        if self._portable is None:
            self._portable = PortableWeights.of(self.grammar_, self.rule_weights_)
        return self._portable

    def score(self, X) -> float:
        """log p(X) under the fitted model, as scikit-learn's ``score`` (higher is better): the sum over the
        utterances of log Z under the predictive weights (cvi, mcmc) or the posterior mean of q (vb), a
        yield never seen in training having only its base mass; -inf when an utterance has no parse."""
        utterances = as_utterances(X)
        compiled, _ = compile_adaptor(self.spec, self.alpha, utterances)
        tables = make_tables(compiled, self.portable_weights(mean=True).on(compiled))
        batch = compiled.prepare(utterances)
        return float(batch_log_z(compiled.kernel, tables, batch.tokens, batch.offsets, batch.span_ids,
                                 batch.span_offsets, chart_chunks(compiled.kernel, batch.offsets)).sum())

    # ------------------------------------------------------------- files (cvbayes.models.files.Persistent)
    def _saved(self):
        """Its parameters, the grammar's text, the learned a and b, the lexicon and the weights `segment`
        needs for new utterances (vb: `score`'s too), the yields as symbol codes."""
        sets = {"segment": self.portable_weights()}
        if self.algorithm_ == "vb":
            sets["score"] = self.portable_weights(mean=True)
        symbols = sorted({s for portable in sets.values() for family in portable.families for key in family
                          for s in key} | {s for key in self.lexicon_ for s in key})
        index = {s: i for i, s in enumerate(symbols)}
        params = {name: getattr(self, name) for name in self.get_params() if name != "grammar"}
        params["anneal"] = None if self.anneal is None else list(self.anneal)
        meta = {"params": params, "grammar": spec_text(self.spec), "symbols": symbols,
                "n_families": len(sets["segment"].families), "weight_sets": list(sets),
                "discount": self.discount.tolist(), "concentration": self.concentration.tolist(),
                "restart_objectives": list(self.restart_objectives_)}
        arrays = {f"{use}_plain": portable.plain for use, portable in sets.items()}
        named = [(f"{use}_family{f}", family) for use, portable in sets.items()
                 for f, family in enumerate(portable.families)] + [("lexicon", self.lexicon_)]
        for name, table in named:
            keys = list(table)
            arrays[f"{name}_symbols"] = np.array([index[s] for key in keys for s in key], dtype=np.int32)
            arrays[f"{name}_offsets"] = np.cumsum([0] + [len(key) for key in keys]).astype(np.int64)
            arrays[f"{name}_values"] = np.array([table[key] for key in keys], dtype=float)
        return meta, arrays

    @classmethod
    def _from_saved(cls, meta, arrays, path):
        """The model `_saved` wrote (files of before the protocol have the same layout); it segments new
        utterances as the fitted one does."""
        params = dict(meta["params"])
        params["anneal"] = None if params["anneal"] is None else tuple(params["anneal"])
        model = cls(grammar=parse_adaptor_grammar(meta["grammar"]), **params)
        symbols = meta["symbols"]

        def table(name):
            codes, offsets, values = (arrays[f"{name}_{part}"] for part in ("symbols", "offsets", "values"))
            return {tuple(symbols[c] for c in codes[offsets[k]:offsets[k + 1]]): float(values[k])
                    for k in range(values.shape[0])}

        model.discount = np.array(meta["discount"], dtype=float)
        model.concentration = np.array(meta["concentration"], dtype=float)
        model.restart_objectives_ = list(meta["restart_objectives"])
        model.lexicon_ = table("lexicon")
        model._portable, model._mean_portable = (
            PortableWeights(arrays[f"{use}_plain"], [table(f"{use}_family{f}") for f in range(meta["n_families"])])
            if use in meta["weight_sets"] else None for use in ("segment", "score"))
        return model
