"""Pitman-Yor adaptor grammars (Johnson, Griffiths and Goldwater 2007) by VB, collapsed VI and MCMC.

An adaptor grammar is a PCFG some of whose nonterminals, the *adapted* ones, cache whole subtrees: an
adapted X rewrites either to a subtree it produced before, with the Pitman-Yor (PY) probability of
reuse, or through its own rules (the *base*), which puts a new subtree in the cache.  With one
adapted ``Word`` over phoneme strings this is Goldwater's unigram word segmentation model; with
``Colloc`` above it, the collocation model (Johnson and Goldwater 2009).

Grammar text
------------
The PCFG text format of `cvbayes.trees.grammar.parse_grammar`, with three additions:

* ``@`` before a rule's left-hand side marks that nonterminal adapted (once is enough);
* a line ``@X a=0.5 b=10`` (no arrow) gives X's PY discount ``a`` (0 <= a < 1) and concentration ``b``
  (b > -a); unset ones take the model's ``a`` and ``b``;
* ``Y+`` on a right-hand side is one or more Y: the rules ``Y+ -> Y`` and ``Y+ -> Y Y+`` are added
  (unless the grammar writes rules for ``Y+`` itself).

Rule weights are not written (the base rules have a symmetric Dirichlet prior ``alpha``), and an adapted
nonterminal may not rewrite to single tokens or ``<any>`` itself (put them under a plain nonterminal), nor
lead back to itself through its rules (``@Word -> X``, ``X -> Word``).
The built-in grammars::

    unigram                     colloc                      colloc-syllable (`syllable_grammar`)
    Sentence -> Word+           Sentence -> Colloc+         Sentence -> Colloc+
    @Word -> Phon+              @Colloc -> Word+            @Colloc -> Word+
    Phon -> <any:1>             @Word -> Phon+              @Word -> SyllableIF | SyllableI SyllableF
                                Phon -> <any:1>               | SyllableI Syllable SyllableF
                                                              | SyllableI Syllable Syllable SyllableF
                                                            Syllable -> Onset Rhyme | Rhyme
                                                            SyllableI -> OnsetI Rhyme | Rhyme
                                                            SyllableF -> Onset RhymeF | RhymeF
                                                            SyllableIF -> OnsetI RhymeF | RhymeF
                                                            Rhyme -> Nucleus Coda | Nucleus
                                                            RhymeF -> Nucleus CodaF | Nucleus
                                                            @Onset -> OnsetConsonant+ (OnsetI, Coda,
                                                              CodaF alike, each its own consonants)
                                                            @Nucleus -> Vowel+
                                                            Vowel, OnsetConsonant, ... -> "x"
                                                            for every vowel or consonant x of Brent's
                                                            phonemes (BRENT_VOWELS, BRENT_CONSONANTS)

Approximation shared by every algorithm
---------------------------------------
The cache of X is indexed by *yields*: an X-node over the substring s is served either by the cache
(total weight cache_X(s) for every cached subtree of yield s) or by the base.  This is the PCFG
approximation of Johnson et al. (2007) (one ``X -> s`` rule per cached yield) taken as the model: for
grammars whose adapted nonterminals' subtrees are fixed by their yield (the unigram grammar: ``Word ->
Phon+``) it is the adaptor grammar itself; above that (``Colloc -> Word+``) a cached collocation keeps
its yield but not its inner word boundaries, which `segment` recovers with the best base parse of the
yield.  The chart is `cvbayes.trees.inside_outside` on the compiled grammar with one ``X -> <any>``
family per adapted X (models/adaptor_kernels.py).

Algorithms (``fit(algorithm=...)``)
-----------------------------------
``vb``  Cohen, Blei and Smith (2010): truncated PY stick-breaking, v_k ~ Beta(1 - a, b + k a), over a
        *grammaton* of ``truncation`` candidate yields per adapted X, the mass beyond the last stick
        left to the base; q(v_k) = Beta(1 - a + u_k, b + k a + sum_{j > k} u_j + u_base), q(theta) =
        Dir(alpha + base rule counts), inside-outside on the weights exp E[log .] (thesis eq. 4.12).
        Between passes the grammaton is refreshed: the ``truncation`` yields with most expected
        customers, in decreasing order; a yield that enters it starts with its expected customers as
        its stick's count.  (The subtrees of the grammaton's atoms are not counted in q(theta); the
        objective, the ELBO, can dip when the grammaton changes and never does while it is fixed.)
``cvi`` Collapsed VI, thesis ch. 4 with the PY adaptor collapsed as well: the unit is an utterance's
        parse, its expected customers are left out and the others' give the PY predictive
        (n_s - a t_s) / (n + b) for the cache at yield s and (b + a T) / (n + b) for the base, the
        MEAN rule (eq. 4.24) for the base rules.  The expected tables are a function of the customers,
        as the HDP's in thesis §5.3 (eq. 5.29-5.35, Teh, Kurihara and Welling 2008):

            E[t_s] = theta_s q(n_s > 0) (psi(theta_s + E_+[n_s]) - psi(theta_s)),
            E_+[n_s] = n_s / q(n_s > 0),   theta_s = b H_X(s),

        the DP's (a = 0) seating of n_s customers of a dish with base mass b H_X(s), where H_X(s) is
        the probability that X's base rules generate s; q(n_s > 0) = 1 - prod_m q(n^m_s = 0) with
        q(n^m_s = 0) = 1 - min(n^m_s, 1) (exact when an utterance has at most one X-node over s in any
        parse).  With a > 0 the same DP formula is used for t_s (an approximation: the PY's seating of
        one dish has no such closed form); only the predictive carries a.  Within a pass t_s and T
        follow every move of the customers (left out per utterance) with theta fixed; after the pass
        theta is recomputed (H_X(s) by inside over every yield s under the current counts) and the
        rules inside adapted subtrees are counted from the tables: a batch inside-outside over the
        yields s of X's cache under X's base rules, yield s weighted by E[t_s], gives X's base rules
        and the plain rules below them, and the customers of the adapted nonterminals used there
        (``Word`` under ``Colloc``; their q(n_s > 0) taken as min(n_s, 1)).  Rules outside every
        adapted subtree (``Sentence -> Word+``) are counted from the utterances, left out as usual.
        CVI needs every nonterminal in one region (top, or one adapted subtree: `adapted_regions`).
        Approximations: the predictive of the expected counts stands for the expected predictive
        (the zeroth-order approximation of §3.3); an utterance's nodes do not see each other's
        customers (as the PCFG's CVI ignores rule reuse within a sentence); the counts from the tables
        are fixed during a pass, so an utterance's own share in them is not left out (nor, for a
        nested adapted nonterminal, in its customers and tables).
``mcmc`` Johnson, Griffiths and Goldwater (2007): Metropolis-Hastings over utterance parses
        (`cvbayes.models.adaptor_mcmc.Sampler`).

Start (``init``)
----------------
All three start from the same state by default: each utterance in a random order gets a tree drawn from
the predictive of the utterances before it (the sampler's initialisation).  VB takes q(theta) and q(v)
from those trees' counts; CVI takes each tree's indicator statistics as the utterance's first local
statistics (the thesis's random start of the local posteriors, footnote 5).  ``init="empty"`` is VB's
E-step under the prior and CVI's first pass over empty counts.

What CVI's approximation does to word segmentation
--------------------------------------------------
The first-order (MEAN) predictive of a yield that other utterances give only a little expected mass is
linear in that mass, far above the base's b H_X(s) / (n + b) (for a long yield H_X(s) is ~1e-20; a yield
with 1e-7 expected customers weighs 1e-11).  A sampler's state has no customer at such a yield, which
costs the base; CVI's has a little, and an utterance repeated k times multiplies the mass of its
whole-string yield by about k / ((n + b) Z) per pass, Z its probability as words: with Z below
k / (n + b) the whole string becomes one word.  So CVI undersegments, more with every pass (on Brent,
`cvbayes experiment wordseg`), and its segmentation is less probable under the exact model than the
sampler's (docs/results/wordseg).  Treating q(n_s = 0) exactly as in thesis
eq. 5.29-5.35 (E[log] split into n_s = 0 and n_s > 0) removes that growth but freezes every yield that
no utterance is sure of, and the segmentation stays where it started; it is not used.
"""
from __future__ import annotations

import copy
import math
import os
import re
import time
import warnings

import numpy as np
from scipy.optimize import minimize
from scipy.special import betaln, digamma, gammaln

from ..core.units import ZeroProbabilityError
from ..data.errors import read_text_file
from ..schedules import Progress
from ..trees.grammar import (BINARY, LEXICAL, SPAN, UNARY, AnySubstring, CompiledGrammar, Grammar, GrammarError,
                             Rule, Terminal, compile_grammar, parse_grammar)
from ..trees.inside_outside import batch_log_z, chart_buffers, cubic_chunks, make_tables, viterbi_batch
from .adaptor_kernels import (all_mean_weights, batch_expectations, cell_expectations, cvi_pass, log_rising,
                              start_pass, vb_table)
from .adaptor_mcmc import Sampler, annealing_temperature
from .hdp import expected_tables
from .pcfg_kernels import sentence_cells

__all__ = ["AdaptorGrammar", "AdaptorGrammarSpec", "BRENT_CONSONANTS", "BRENT_VOWELS", "BUILT_IN_GRAMMARS",
           "parse_adaptor_grammar", "syllable_grammar"]

# Brent's phonemic alphabet (Brent 1999) split into syllable nuclei (vowels, r-coloured vowels and the
# syllabic consonants ~ M L) and consonants, for the colloc-syllable grammar
BRENT_VOWELS = tuple("& 6 7 9 A E I O Q U a e i o u 3 R # % ( ) * ~ L M".split())
BRENT_CONSONANTS = tuple("b c d f g h k l m n p r s t v w y z D G N S T W Z".split())


def syllable_grammar(vowels, consonants, edges=True) -> str:
    """The colloc-syllable grammar's text over the given nucleus and consonant symbols.

    Johnson and Goldwater's (2009) collocations of words with syllable structure, as the grammar files of
    the bootphon/wordseg repository write it (``data/ag/Coll3syllfnc_*.lt`` with one collocation level and
    no function words): a word is one syllable with the word's own onset and coda (``SyllableIF``) or a
    word-initial syllable, up to two inner ones and a word-final one; word-initial syllables have their own
    onsets (``OnsetI``), word-final ones their own codas (``CodaF``), so that the consonant clusters that
    begin and end words are learned apart from those inside them.  A syllable is an optional onset and a
    rhyme, a rhyme a nucleus (one or more vowels) and an optional coda.  Adapted: Colloc, Word, Onset,
    OnsetI, Nucleus, Coda, CodaF (their syllables and rhymes are not).  Unlike theirs, each of the four
    onset and coda nonterminals draws its consonants from its own rules (``OnsetConsonant``,
    ``OnsetIConsonant``, ``CodaConsonant``, ``CodaFConsonant``), so that every nonterminal lies in one
    adapted subtree, as CVI needs (`adapted_regions`): their base distributions over consonants are learned
    separately rather than shared.

    ``edges=False`` gives the grammar without word-edge variants that cvbayes had before (a word is one to
    four ``Syllable``; adapted: Colloc, Word, Syllable, Onset, Rhyme, Nucleus, Coda).

    Raises
    ------
    ValueError
        When a symbol is in both lists or either list is empty.
    """
    vowels, consonants = list(dict.fromkeys(vowels)), list(dict.fromkeys(consonants))
    if not vowels or not consonants:
        raise ValueError("the syllable grammar needs at least one vowel and one consonant")
    both = sorted(set(vowels) & set(consonants))
    if both:
        raise ValueError(f"symbols both vowel and consonant: {' '.join(both)}")

    def quoted(symbol):
        return '"' + symbol.replace("\\", "\\\\").replace('"', '\\"') + '"'

    rules = ["Sentence -> Colloc+", "@Colloc -> Word+"]
    if edges:
        rules += ["@Word -> SyllableIF"] + ["@Word -> " + " ".join(["SyllableI"] + ["Syllable"] * n + ["SyllableF"])
                                           for n in range(3)]
        for syllable, onset, rhyme in (("Syllable", "Onset", "Rhyme"), ("SyllableI", "OnsetI", "Rhyme"),
                                       ("SyllableF", "Onset", "RhymeF"), ("SyllableIF", "OnsetI", "RhymeF")):
            rules += [f"{syllable} -> {onset} {rhyme}", f"{syllable} -> {rhyme}"]
        rules += ["Rhyme -> Nucleus Coda", "Rhyme -> Nucleus", "RhymeF -> Nucleus CodaF", "RhymeF -> Nucleus"]
        clusters = ("Onset", "OnsetI", "Coda", "CodaF")
        rules += [f"@{cluster} -> {cluster}Consonant+" for cluster in clusters] + ["@Nucleus -> Vowel+"]
    else:
        rules += ["@Word -> " + " ".join(["Syllable"] * n) for n in range(1, 5)]
        rules += ["@Syllable -> Onset Rhyme", "@Syllable -> Rhyme", "@Onset -> OnsetConsonant+",
                  "@Rhyme -> Nucleus Coda", "@Rhyme -> Nucleus", "@Nucleus -> Vowel+", "@Coda -> CodaConsonant+"]
        clusters = ("Onset", "Coda")
    rules += [f"Vowel -> {quoted(v)}" for v in vowels]
    rules += [f"{cluster}Consonant -> {quoted(c)}" for cluster in clusters for c in consonants]
    return "\n".join(rules) + "\n"


BUILT_IN_GRAMMARS = {
    "unigram": "Sentence -> Word+\n@Word -> Phon+\nPhon -> <any:1>\n",
    "colloc": "Sentence -> Colloc+\n@Colloc -> Word+\n@Word -> Phon+\nPhon -> <any:1>\n",
    "colloc-syllable": syllable_grammar(BRENT_VOWELS, BRENT_CONSONANTS),
}

_DECLARATION = re.compile(r"^\s*@(\S+)((?:\s+[ab]\s*=\s*\S+)*)\s*(#.*)?$")
_SETTING = re.compile(r"([ab])\s*=\s*(\S+)")
_ADAPTED_LHS = re.compile(r"^(\s*(?:[-+0-9.eE]+\s+)?)@(?=\S)")
_PLUS = re.compile(r"(?<![\"'\S])([^\s\"'#<>@+][^\s\"'#<>]*)\+(?=\s|$|#)")


class AdaptorGrammarSpec:
    """A parsed adaptor grammar: its CFG, its adapted nonterminals and their PY parameters.

    Attributes
    ----------
    grammar : Grammar
        The CFG with the markers removed and the ``Y+`` rules added.
    adapted : dict of str to (float or None, float or None)
        Adapted nonterminal -> (discount a, concentration b) as written (None: the model's default).
    """

    def __init__(self, grammar: Grammar, adapted: dict):
        self.grammar = grammar
        self.adapted = dict(adapted)
        for name in self.adapted:
            if name not in grammar.nonterminals:
                raise GrammarError(f"adapted nonterminal {name!r} has no rules", grammar.path)
            for rule in grammar.rules:
                if rule.lhs == name and rule.kind in (LEXICAL, SPAN):
                    raise GrammarError(f"adapted {name} rewrites to terminals directly; put them under a "
                                       f"plain nonterminal ({name} -> Y, Y -> ...)", grammar.path, rule.line)
        if not self.adapted:
            raise GrammarError("no adapted nonterminal (mark one with '@', e.g. '@Word -> Phon+')", grammar.path)
        for name in self.adapted:
            cycle = _rewrites_to_itself(grammar, name)
            if cycle is not None:
                raise GrammarError(f"adapted {name} rewrites to itself ({' -> '.join(cycle[0])}): the cache of an "
                                   "adapted nonterminal cannot be part of its own base", grammar.path, cycle[1])

    def __repr__(self) -> str:
        return f"AdaptorGrammarSpec({self.grammar!r}, adapted={sorted(self.adapted)})"


def _rewrites_to_itself(grammar: Grammar, name: str):
    """(chain, line): the shortest chain of nonterminals from `name` back to itself through the grammar's
    rules and the line of `name`'s rule that starts it; None when there is none."""
    rules = {}
    for rule in grammar.rules:
        rules.setdefault(rule.lhs, []).append(rule)
    # breadth first from name's own rules; way[child] = (parent, the rule of name's that starts the path)
    way, queue = {}, []
    for rule in rules.get(name, []):
        for child in rule.rhs:
            if isinstance(child, str) and child not in way:
                way[child] = (name, rule)
                queue.append(child)
    for current in queue:
        if current == name:
            chain, node = [name], way[name][0]
            while node != name:
                chain.insert(0, node)
                node = way[node][0]
            return [name] + chain, way[name][1].line
        for rule in rules.get(current, []):
            for child in rule.rhs:
                if isinstance(child, str) and child not in way:
                    way[child] = (current, way[current][1])
                    queue.append(child)
    return None


def parse_adaptor_grammar(text: str, path=None) -> AdaptorGrammarSpec:
    """Parse the adaptor grammar text format (module notes); errors name the file and line.

    Raises
    ------
    GrammarError
    """
    adapted: dict[str, list] = {}
    lines = []
    defined_plus = set()
    wanted_plus: dict[str, int] = {}
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.removesuffix("\r")
        body = line.split("#", 1)[0] if '"' not in line and "'" not in line else line
        if "->" not in body and body.strip().startswith("@"):
            match = _DECLARATION.match(line)
            if match is None:
                raise GrammarError(f"expected '@Name a=<discount> b=<concentration>', got {line.strip()!r}",
                                   path, number)
            settings = adapted.setdefault(match.group(1), [None, None])
            for key, value in _SETTING.findall(match.group(2)):
                try:
                    settings["ab".index(key)] = float(value)
                except ValueError:
                    raise GrammarError(f"{key}={value!r} is not a number", path, number) from None
            lines.append("")
            continue
        marked = _ADAPTED_LHS.match(line)
        if marked is not None:
            line = marked.group(1) + line[marked.end():]
            adapted.setdefault(line[len(marked.group(1)):].split()[0], [None, None])
        if "->" in body:
            lhs, rhs = line.split("->", 1)
            if lhs.split() and lhs.split()[-1].endswith("+"):
                defined_plus.add(lhs.split()[-1][:-1])
            for match in _PLUS.finditer(rhs.split("#", 1)[0]):
                wanted_plus.setdefault(match.group(1), number)
        lines.append(line)
    for name, (a, b) in adapted.items():
        if a is not None and not 0.0 <= a < 1.0:
            raise GrammarError(f"{name}: the discount a must be in [0, 1), got {a}", path)
        if b is not None and not b > -(a or 0.0):
            raise GrammarError(f"{name}: the concentration b must exceed -a, got {b}", path)
    for name in wanted_plus:
        if name not in defined_plus:
            lines.append(f"{name}+ -> {name}")
            lines.append(f"{name}+ -> {name} {name}+")
    grammar = parse_grammar("\n".join(lines), path=path)
    if grammar.has_weights:
        raise GrammarError("rule weights are not used by adaptor grammars (the base rules have a Dirichlet "
                           "prior): remove them", path, grammar.rules[0].line)
    return AdaptorGrammarSpec(grammar, {name: tuple(v) for name, v in adapted.items()})


def _as_spec(grammar) -> AdaptorGrammarSpec:
    if isinstance(grammar, AdaptorGrammarSpec):
        return grammar
    if isinstance(grammar, str):
        if grammar in BUILT_IN_GRAMMARS:
            return parse_adaptor_grammar(BUILT_IN_GRAMMARS[grammar], path=f"<{grammar}>")
        if "->" not in grammar:
            if not os.path.exists(grammar):
                raise ValueError(f"unknown grammar {grammar!r}: not a built-in ({', '.join(BUILT_IN_GRAMMARS)}), "
                                 "not a file, and not grammar text")
            return parse_adaptor_grammar(read_grammar_text(grammar), path=grammar)
        return parse_adaptor_grammar(grammar)
    if isinstance(grammar, Grammar):
        raise TypeError("a Grammar does not say which nonterminals are adapted: pass "
                        "AdaptorGrammarSpec(grammar, {'Word': (None, None)}) or the grammar's text with '@'")
    raise TypeError("grammar must be adaptor grammar text, a file name, one of "
                    f"{', '.join(BUILT_IN_GRAMMARS)}, or an AdaptorGrammarSpec")


def read_grammar_text(path) -> str:
    """The text of a grammar file (errors as `cvbayes.trees.grammar.read_grammar`)."""
    return read_text_file(path, "utf-8", GrammarError)


def _as_utterances(X) -> list:
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


def adapted_regions(spec: AdaptorGrammarSpec) -> tuple[dict, dict]:
    """Which subtree every nonterminal lives in, for CVI's tables.

    The *top* region holds the nonterminals reachable from the start without passing an adapted one;
    adapted X's region holds X and the plain nonterminals reachable from X's base rules without passing
    another adapted one.  Returns (region, parent): nonterminal -> None (top) or adapted name, and
    adapted name -> the region it appears in (None: top).

    Raises
    ------
    GrammarError
        When a plain nonterminal lies in two regions, an adapted one is used in two regions, or an
        adapted one is reachable from its own base rules (CVI counts every region from one place).
    """
    grammar = spec.grammar
    children = {name: [c for r in grammar.rules if r.lhs == name for c in r.rhs if isinstance(c, str)]
                for name in grammar.nonterminals}
    region, parent = {}, {}
    for owner, root in [(None, grammar.start)] + [(x, x) for x in spec.adapted]:
        region[root] = owner
        stack, seen = [root], {root}
        while stack:
            for child in children[stack.pop()]:
                if child in spec.adapted:
                    if child == owner or parent.get(child, owner) != owner:
                        where = [p or "the top" for p in {owner, parent.get(child, owner)}]
                        raise GrammarError(f"adapted {child} is used under {' and '.join(where)}: CVI needs each "
                                           "adapted nonterminal in one place, never inside itself", grammar.path)
                    parent[child] = owner
                    continue
                if child in seen:
                    continue
                if region.get(child, owner) != owner:
                    raise GrammarError(f"{child} is used both under {region[child] or 'the top'} and under "
                                       f"{owner or 'the top'}: CVI needs each plain nonterminal in one adapted "
                                       "subtree (or outside all); give each its own copy", grammar.path)
                region[child] = owner
                seen.add(child)
                stack.append(child)
    return region, parent


class AdaptorGrammar:
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
        mcmc samples them (slice sampling under a ~ Beta(1, 1),
        b ~ Gamma(10, 0.1), `cvbayes.models.adaptor_mcmc.Sampler.resample_hyperparameters`); cvi and vb
        maximise (empirical Bayes): cvi the Pitman-Yor probability of the expected seating,
        sum_{i=1}^{T-1} log(b + i a) - log Gamma(b + n) + log Gamma(b + 1)
        + sum_s t_s (log Gamma(n_s / t_s - a) - log Gamma(1 - a)) (Pitman and Yor 1997's exchangeable
        partition probability with yield s's n_s expected customers spread evenly over its t_s expected
        tables, T = sum_s t_s real-valued through Gamma functions), vb E_q[log p(v | a, b)] of its sticks.
    init : {"sample", "empty"}, default "sample"
        vb and cvi start from the sampler's initial state (each utterance's tree drawn from the predictive
        of those before it, `cvbayes.models.adaptor_mcmc.Sampler.initialise`; for cvi, the trees'
        statistics are the utterances' first local statistics, the thesis's random start of the local
        posteriors, footnote 5); "empty": vb's first E-step under the prior, cvi's first pass adding the
        utterances' expected statistics one by one.
    anneal : (float, int), optional
        mcmc only: (start temperature T0, sweeps): the first sweeps target p(tree | others)^(1/T) with
        1/T rising geometrically from 1/T0 to 1 (Johnson's py-cfg schedule, `annealing_temperature`).

    Attributes (after fit)
    ----------------------
    history_ : list of IterationRecord
    lexicon_ : dict of tuple of str to float
        Expected customers (token counts) of each yield of ``word`` with at least 0.01 of them.
    rule_weights_ : ndarray (R,)
        The weights `segment` parses with (over ``grammar_``): the predictive of the final counts
        (cvi, mcmc) or VB's exp E[log .] weights.
    grammar_ : CompiledGrammar
    concentration, discount : ndarray (M,)
        Each adapted nonterminal's PY b and a (as learned with ``estimate_hyperparameters``).
    segmentation_ : list of list of tuple of str
        mcmc only: the words of the current sample's trees of the training utterances.
    acceptance_rate_ : float
        mcmc only: the share of accepted MH proposals.
    """

    ALGORITHMS = ("vb", "cvi", "mcmc")
    INITS = ("sample", "empty")

    def __init__(self, grammar="unigram", a=0.0, b=1.0, alpha=1.0, truncation=10000, word="Word",
                 estimate_hyperparameters=False, init="sample", anneal=None):
        self.spec = _as_spec(grammar)
        if not 0.0 <= a < 1.0:
            raise ValueError(f"a (the PY discount) must be in [0, 1), got {a}")
        if not b > -a:
            raise ValueError(f"b (the PY concentration) must exceed -a, got {b}")
        if not alpha > 0:
            raise ValueError(f"alpha must be positive, got {alpha}")
        if int(truncation) < 1:
            raise ValueError(f"truncation must be a positive integer, got {truncation}")
        if word not in self.spec.grammar.nonterminals:
            raise ValueError(f"the grammar has no nonterminal {word!r} (the word level); pass word=...")
        self.a, self.b, self.alpha, self.truncation, self.word = float(a), float(b), float(alpha), int(truncation), word
        self.estimate_hyperparameters = bool(estimate_hyperparameters)
        if init not in self.INITS:
            raise ValueError(f"unknown init {init!r}; choose one of {', '.join(self.INITS)}")
        self.init = init
        if anneal is not None and not (len(anneal) == 2 and anneal[0] >= 1.0 and int(anneal[1]) >= 1):
            raise ValueError(f"anneal must be (start temperature >= 1, sweeps >= 1), got {anneal!r}")
        self.anneal = anneal
        self.adapted_names = tuple(self.spec.adapted)
        self._reset_py_parameters()

    def _reset_py_parameters(self):
        """discount (M,) and concentration (M,): each adapted nonterminal's own, else the model's a and b."""
        written = [self.spec.adapted[name] for name in self.adapted_names]
        self.discount = np.array([self.a if a is None else a for a, _ in written])
        self.concentration = np.array([self.b if b is None else b for _, b in written])
        if np.any(self.concentration <= -self.discount):
            raise ValueError("every PY concentration b must exceed -a")

    # ------------------------------------------------------------- compiling
    def _augmented(self) -> Grammar:
        """The CFG with one ``X -> <any>`` cache family per adapted X (after X's base rules)."""
        grammar = self.spec.grammar
        rules = []
        for name in grammar.nonterminals:
            rules.extend(rule for rule in grammar.rules if rule.lhs == name)
            if name in self.spec.adapted:
                rules.append(Rule(name, (AnySubstring(None),)))
        return Grammar(rules, start=grammar.start, path=grammar.path)

    def _compile(self, utterances) -> tuple[CompiledGrammar, dict]:
        """The augmented grammar compiled over `utterances` and its rule layout (models/adaptor_kernels.py)."""
        compiled = compile_grammar(self._augmented(), utterances, layout="sparse")
        kernel = compiled.kernel
        names = {name: i for i, name in enumerate(compiled.nonterminals)}
        adapted_of = np.full(compiled.n_nonterminals, -1, dtype=np.int32)
        adapted_symbol = np.empty(len(self.adapted_names), dtype=np.int64)
        cache_of = np.full(compiled.n_rules, -1, dtype=np.int32)
        for x, name in enumerate(self.adapted_names):
            symbol = names[name]
            adapted_of[symbol] = x
            adapted_symbol[x] = symbol
            family = int(np.flatnonzero(kernel.span_parent == symbol)[0])
            first = kernel.span_base[family]
            cache_of[first:first + kernel.span_count[family]] = x
        base = cache_of < 0
        widths = np.bincount(compiled.rule_parent[base], minlength=compiled.n_nonterminals)
        layout = dict(adapted_of=adapted_of, adapted_symbol=adapted_symbol, cache_of=cache_of,
                      row_prior=widths * self.alpha, base=base)
        return compiled, layout

    # ------------------------------------------------------------- fitting
    def fit(self, utterances, algorithm="cvi", n_iter=20, seed=0, progress=False, callback=None, n_init=1):
        """Learn from utterances (each a sequence of symbols: phonemes, characters).

        Parameters
        ----------
        utterances : list of sequences of str
        algorithm : {"vb", "cvi", "mcmc"}
        n_iter : int
            Passes (sweeps) over the utterances.
        seed : int
            The start's draws (``init="sample"``); CVI and MCMC visit the utterances in a fresh random order
            every pass; MCMC's draws.
        progress : bool
            Show a progress bar.
        callback : callable, optional
            ``callback(model, iteration)`` after every pass (the model's fitted attributes are current).
        n_init : int, default 1
            Restarts from seeds seed, ..., seed + n_init - 1; the model keeps the one with the highest final
            objective (VB's ELBO, CVI's summed log predictive, MCMC's log p(trees, seating)), as
            scikit-learn's ``n_init``.  Their objectives are in ``restart_objectives_``.  VB depends on its
            start (on Brent its token F1 ranges over 0.30-0.58 across seeds) and the ELBO picks the good ones.

        Returns
        -------
        self
        """
        if algorithm not in self.ALGORITHMS:
            raise ValueError(f"unknown algorithm {algorithm!r}; choose one of {', '.join(self.ALGORITHMS)}")
        if int(n_init) < 1:
            raise ValueError(f"n_init must be a positive integer, got {n_init}")
        utterances = _as_utterances(utterances)
        unknown = self.underivable_symbol(utterances)
        if unknown is not None:
            raise ValueError(f"utterance {unknown[0]} has the symbol {unknown[1]!r}, which is not a terminal of the "
                             f"grammar (its terminals: {self.terminals_text()})")
        if n_init > 1:
            trials = [copy.copy(self)._fit_once(utterances, algorithm, n_iter, seed + r, progress, callback)
                      for r in range(int(n_init))]
            objectives = [trial.history_[-1].objective if trial.history_ else -math.inf for trial in trials]
            self.__dict__.update(trials[int(np.argmax(objectives))].__dict__)
            self.restart_objectives_ = objectives
            return self
        return self._fit_once(utterances, algorithm, n_iter, seed, progress, callback)

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
                "anneal": None if self.anneal is None else list(self.anneal),
                "discount": self.discount.tolist(), "concentration": self.concentration.tolist()}

    def terminals_text(self) -> str:
        """The grammar's quoted terminals, for error messages."""
        terminals = sorted({symbol.text for rule in self.spec.grammar.rules for symbol in rule.rhs
                            if isinstance(symbol, Terminal)})
        return " ".join(terminals[:60]) + (" ..." if len(terminals) > 60 else "")

    def _fit_once(self, utterances, algorithm, n_iter, seed, progress, callback):
        self._reset_py_parameters()
        self._learn_discount = self.discount > 0    # a Dirichlet process (a = 0) stays one (py-cfg's rule)
        self.algorithm_ = algorithm
        self.grammar_, self._layout = self._compile(utterances)
        self._train = utterances
        self._batch = self.grammar_.prepare(utterances)
        self._callback = callback
        run = {"vb": self._fit_vb, "cvi": self._fit_cvi, "mcmc": self._fit_mcmc}[algorithm]
        with Progress(n_iter, algorithm, progress) as bar:
            self.history_ = bar.history
            run(n_iter, np.random.default_rng(seed), bar)
        self.restart_objectives_ = [self.history_[-1].objective] if self.history_ else []
        return self

    def _record(self, bar, iteration, objective, started):
        """History, progress bar and the user's callback after a pass."""
        bar.record(iteration, objective, time.perf_counter() - started)
        if self._callback is not None:
            self._set_fitted()
            self._callback(self, iteration)

    # CVI
    def _fit_cvi(self, n_iter, rng, bar):
        """CVI passes (schedules.leave_one_out via `cvi_pass`), from empty counts: the first pass adds
        the utterances one by one, each parsed against those before it; after every pass the tables,
        theta and the base counts are refreshed (`_refresh_tables`)."""
        compiled, layout = self.grammar_, self._layout
        kernel, batch, n_rules = compiled.kernel, self._batch, compiled.n_rules
        cell_offsets, cell_rules = sentence_cells(kernel, batch.tokens, batch.offsets, batch.span_ids,
                                                  batch.span_offsets, n_rules)
        region, parent = adapted_regions(self.spec)
        names = compiled.nonterminals
        region_of = np.array([-1 if region.get(a) is None else self.adapted_names.index(region[a]) for a in names],
                             dtype=np.int32)
        self._region_of, self._adapted_parent = region_of, parent
        self._order = self._top_down(parent)
        top_adapted = [x for x, name in enumerate(self.adapted_names) if parent.get(name) is None]
        self._top_adapted = set(top_adapted)
        counted_symbol = layout["adapted_symbol"][top_adapted].astype(np.int64)
        top_rule = layout["base"] & (region_of[compiled.rule_parent] < 0)
        n_adapted = len(self.adapted_names)
        self._model = (np.zeros(n_rules), np.zeros(compiled.n_nonterminals), compiled.rule_parent, self.alpha,
                       layout["row_prior"].astype(float), layout["cache_of"], layout["adapted_of"],
                       counted_symbol, np.zeros(n_rules), np.zeros(n_rules), np.zeros(n_adapted),
                       np.zeros(n_adapted), self.discount.copy(), self.concentration.copy(), np.zeros(n_rules),
                       top_rule, np.zeros(n_rules), np.zeros(n_rules))
        self._table_counts = np.zeros(n_rules)
        self._table_charts = {}
        longest = int(np.diff(batch.offsets).max())
        sentences = (kernel, batch.tokens, batch.offsets, batch.span_ids, batch.span_offsets, cell_offsets,
                     cell_rules)
        local = (np.zeros(cell_rules.shape[0]), np.zeros(cell_rules.shape[0]))
        n = kernel.n_symbols
        work = (np.zeros(n_rules), np.zeros(n_rules), np.zeros((0, 0)),
                chart_buffers(kernel, longest), np.zeros((longest + 1, longest + 1, n)))
        state = (sentences, self._model, local, work)
        self._cvi_state = state
        self._refresh_tables()       # theta_s = b H_X(s) of every yield under the prior base
        if self.init == "sample":
            bad = start_pass(state, rng.permutation(len(batch)).astype(np.int64), int(rng.integers(2 ** 62)))
            if bad >= 0:
                raise ZeroProbabilityError(f"utterance {bad} has no parse under the grammar")
            self._refresh_tables()
        for iteration in range(n_iter):
            started = time.perf_counter()
            order = rng.permutation(len(batch)).astype(np.int64)
            objective, bad = cvi_pass(state, order)
            if bad >= 0:
                raise ZeroProbabilityError(f"utterance {bad} has no parse under the grammar")
            self._refresh_tables()
            if self.estimate_hyperparameters:     # from the refreshed tables; theta_s follows b at the next refresh
                self._estimate_hyperparameters_cvi()
            self._record(bar, iteration, objective, started)
        self._set_fitted()

    def _top_down(self, parent) -> list:
        """The adapted nonterminals' indices, each after the one whose region it is used in."""
        order, placed = [], {None}
        while len(order) < len(self.adapted_names):
            for x, name in enumerate(self.adapted_names):
                if x not in order and parent.get(name) in placed:
                    order.append(x)
                    placed.add(name)
        return order

    def _table_chart(self, x, mean):
        """Adapted X's table chart: the base-only grammar of X (`base_chart_grammar`) and every yield of
        X's cache family that X's base rules can derive as a sentence, with its cells, chunks and the rules
        CVI takes from it.  `mean`: positive weights of the base rules, to find the derivable yields (the
        others never get a customer, so their theta and tables stay 0)."""
        if x in self._table_charts:
            return self._table_charts[x]
        compiled, layout = self.grammar_, self._layout
        name = self.adapted_names[x]
        inner, to_global, top = base_chart_grammar(self, compiled, self._train, name)
        family = int(np.flatnonzero(compiled.kernel.span_parent == layout["adapted_symbol"][x])[0])
        first, count = compiled.kernel.span_base[family], compiled.kernel.span_count[family]
        substrings = [np.asarray(compiled.substrings.substrings[j], dtype=np.int32) for j in range(count)]
        every = inner.prepare(substrings)
        probe = np.where(layout["base"][to_global], mean[to_global], 0.0)
        derivable = np.flatnonzero(np.isfinite(batch_log_z(inner.kernel, make_tables(inner, probe), every.tokens,
                                                           every.offsets, every.span_ids, every.span_offsets,
                                                           cubic_chunks(every.offsets))))
        yields = inner.prepare([substrings[j] for j in derivable])
        cell_offsets, cell_rules = sentence_cells(inner.kernel, yields.tokens, yields.offsets, yields.span_ids,
                                                  yields.span_offsets, inner.n_rules)
        cell_global = to_global[cell_rules]
        base = layout["base"][cell_global]
        own = base & (self._region_of[compiled.rule_parent[cell_global]] == x)
        root = np.flatnonzero(inner.rule_parent == top)
        children = np.array([inner.nonterminals.index(y) for y in self.adapted_names
                             if self._adapted_parent.get(y) == name],
                            dtype=np.int64)
        chart = dict(inner=inner, to_global=to_global, root=root, cells=first + derivable,
                     yields=yields, chunks=cubic_chunks(yields.offsets), cell_offsets=cell_offsets,
                     cell_rules=cell_rules, cell_global=cell_global, own=own, children=children)
        self._table_charts[x] = chart
        return chart

    def _refresh_tables(self):
        """Tables, theta and the base counts from the customers (once per CVI pass), top-down over the
        adapted nonterminals (module notes, ``cvi``).

        For adapted X and every yield s of X's cache: H_X(s), the probability that X's base rules
        generate s (inside of ``X%base`` over s with the MEAN weights of the current counts, adapted
        nonterminals below X by their predictive); theta_s = b_X H_X(s); E[t_s] by thesis eq. 5.35
        (`cvbayes.models.hdp.expected_tables`) from the customers n_s and q(n_s > 0).  Then the weighted
        batch inside-outside over the yields, sentence s weighted by E[t_s], gives the counts of the rules
        in X's region and the customers of the adapted nonterminals used there (whose q(n_s > 0) is taken
        as min(n_s, 1)).  The counts replace the previous pass's table counts.
        """
        compiled, layout, model = self.grammar_, self._layout, self._model
        counts, row_totals, rule_parent, alpha, row_prior = model[:5]
        customers, tables, total_customers, total_tables = model[8:12]
        theta_all, log_empty = model[16], model[17]
        n_rules = compiled.n_rules
        weights = all_mean_weights(model, n_rules)
        mean = (counts + alpha) / np.maximum(row_totals[rule_parent] + row_prior[rule_parent], 1e-300)
        table_counts = np.zeros(n_rules)
        nested = np.zeros(n_rules)
        for x in self._order:
            chart = self._table_chart(x, mean)
            inner, to_global, cells = chart["inner"], chart["to_global"], chart["cells"]
            inner_weights = weights[to_global]
            inner_weights[chart["root"]] = mean[to_global[chart["root"]]]    # H_X: without X's base mass
            yields = chart["yields"]
            local_counts, local_customers, log_z = cell_expectations(
                inner.kernel, make_tables(inner, inner_weights), yields.tokens, yields.offsets, yields.span_ids,
                yields.span_offsets, chart["chunks"], chart["cell_offsets"], chart["cell_rules"], inner.n_rules,
                chart["children"])
            if x not in self._top_adapted:
                customers[cells] = nested[cells]
                total_customers[x] = customers[cells].sum()
                occupied = np.minimum(customers[cells], 1.0)
            else:
                occupied = -np.expm1(np.minimum(log_empty[cells], 0.0))
            theta = self.concentration[x] * np.exp(log_z)
            served = customers[cells]
            ok = (theta > 0) & (served > 0) & (occupied > 0)
            expected = np.zeros(cells.shape[0])
            expected[ok] = expected_tables(theta[ok], served[ok], occupied[ok])
            theta_all[cells] = theta
            tables[cells] = expected
            total_tables[x] = expected.sum()
            weight = np.repeat(expected, np.diff(chart["cell_offsets"]))
            own, cell_global = chart["own"], chart["cell_global"]
            table_counts += np.bincount(cell_global[own], weights=(weight * local_counts)[own], minlength=n_rules)
            nested += np.bincount(cell_global, weights=weight * local_customers, minlength=n_rules)
        counts += table_counts - self._table_counts
        self._table_counts = table_counts
        base = layout["base"]
        row_totals[:] = np.bincount(rule_parent[base], weights=counts[base], minlength=row_totals.shape[0])

    def _estimate_hyperparameters_cvi(self):
        """Empirical-Bayes a and b of every adapted nonterminal from CVI's expected seating
        (``estimate_hyperparameters``); theta_s follows b at the next table refresh."""
        model, layout = self._model, self._layout
        customers, tables = model[8], model[9]
        for x in range(len(self.adapted_names)):
            cells = np.flatnonzero(layout["cache_of"] == x)
            served, seated = customers[cells], tables[cells]
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

            a, log_b = self._maximise(loss, x)
            self.discount[x], self.concentration[x] = model[12][x], model[13][x] = a, math.exp(log_b)

    def _estimate_hyperparameters_vb(self):
        """Empirical-Bayes a and b in VB: maximise sum_k E_q[log Beta(v_k; 1 - a, b + k a)] of X's sticks."""
        for x, (_, first, second) in enumerate(self._sticks):
            if first.shape[0] == 0:
                continue
            k = np.arange(1, first.shape[0] + 1)
            log_stop = digamma(first) - digamma(first + second)
            log_not = digamma(second) - digamma(first + second)

            def loss(point):
                a, b = point[0], math.exp(point[1])
                p, q = 1.0 - a, b + k * a
                return -float((-betaln(p, q) + (p - 1) * log_stop + (q - 1) * log_not).sum())

            self.discount[x], log_b = self._maximise(loss, x)
            self.concentration[x] = math.exp(log_b)

    def _maximise(self, loss, x):
        """argmin of loss(a, log b) over a in [0, 0.99] (a = 0 when X started as a Dirichlet process) and
        log b in [-8, 12] by L-BFGS-B from X's current a and b."""
        start = np.array([min(self.discount[x], 0.98), math.log(max(self.concentration[x], 1e-3))])
        discounts = (0.0, 0.99) if self._learn_discount[x] else (0.0, 0.0)
        found = minimize(loss, start, method="L-BFGS-B", bounds=[discounts, (-8.0, 12.0)])
        return float(found.x[0]), float(found.x[1])

    # MCMC
    def _fit_mcmc(self, n_iter, rng, bar):
        """MH sweeps in a fresh random order each (`cvbayes.models.adaptor_mcmc.Sampler`); the history holds
        log p(trees, seating)."""
        sampler = Sampler(self, rng)
        self._sampler = sampler
        sampler.initialise(rng.permutation(len(self._batch)))
        for iteration in range(n_iter):
            started = time.perf_counter()
            temperature = 1.0 if self.anneal is None else annealing_temperature(iteration, *self.anneal)
            for i in rng.permutation(len(self._batch)):
                sampler.step(int(i), temperature)
            if self.estimate_hyperparameters:
                sampler.resample_hyperparameters()
            self._record(bar, iteration, sampler.log_joint(), started)
        self._set_fitted()

    # VB
    def _fit_vb(self, n_iter, rng, bar):
        """VB passes (Cohen, Blei and Smith 2010; module notes): E-step on the current q, then q(theta)
        and q(v) with a refreshed grammaton; the history holds the ELBO of the q the E-step used."""
        compiled, layout = self.grammar_, self._layout
        batch, n_rules = self._batch, compiled.n_rules
        base, cache_of = layout["base"], layout["cache_of"]
        n_adapted = len(self.adapted_names)
        self._counts = np.zeros(n_rules)          # base rule counts of q(theta)
        self._log_stick = np.full(n_rules, -np.inf)
        self._log_rest = np.zeros(n_adapted)
        self._sticks = [(np.zeros(0, np.int64), np.zeros(0), np.zeros(0)) for _ in range(n_adapted)]
        if self.init == "sample":    # q(theta) and q(v) from the sampler's initial trees
            start = Sampler(self, rng)
            start.initialise(rng.permutation(len(batch)))
            self._counts = np.where(base, start.state[0], 0.0)
            for x in range(n_adapted):
                self._sticks[x] = self._refresh(x, np.flatnonzero(cache_of == x), start.state[0], start.state[8])
        chunks = cubic_chunks(batch.offsets)
        for iteration in range(n_iter):
            started = time.perf_counter()
            table = self._vb_weights()
            tables = make_tables(compiled, table)
            counts, customers, log_z = batch_expectations(compiled.kernel, tables, batch.tokens, batch.offsets,
                                                          batch.span_ids, batch.span_offsets, chunks, n_rules,
                                                          layout["adapted_symbol"])
            if not np.all(np.isfinite(log_z)):
                raise ZeroProbabilityError(f"utterance {int(np.flatnonzero(~np.isfinite(log_z))[0])} has no parse")
            objective = float(log_z.sum()) - self._dirichlet_kl(self._counts) - self._beta_kl()
            self._counts = np.where(base, counts, 0.0)
            for x in range(n_adapted):
                self._sticks[x] = self._refresh(x, np.flatnonzero(cache_of == x), counts, customers)
            self._customers = customers
            if self.estimate_hyperparameters:
                self._estimate_hyperparameters_vb()
            self._record(bar, iteration, objective, started)
        self._set_fitted()

    def _refresh(self, x, cells, uses, customers):
        """q(v) of adapted X after an E-step, over a refreshed grammaton (module notes, ``vb``)."""
        previous = self._sticks[x][0]
        in_cache = np.zeros(self.grammar_.n_rules, dtype=bool)
        in_cache[previous] = True
        served = customers[cells]
        keep = np.flatnonzero(served > 1e-9)
        top = keep[np.argsort(-served[keep], kind="stable")[:self.truncation]]
        members = cells[top]
        counts = np.where(in_cache[members], uses[members], customers[members])
        order = np.argsort(-counts, kind="stable")
        members, counts = members[order], counts[order]
        base_uses = max(customers[cells].sum() - counts.sum(), 0.0)
        a, b = self.discount[x], self.concentration[x]
        k = np.arange(1, members.shape[0] + 1)
        after = np.cumsum(counts[::-1])[::-1] - counts        # sum_{j > k} u_j
        first = 1.0 - a + counts
        second = b + k * a + after + base_uses
        self._log_rest[x] = 0.0
        log_not = digamma(second) - digamma(first + second)
        log_stop = digamma(first) - digamma(first + second)
        self._log_stick[cells] = -np.inf
        self._log_stick[members] = log_stop + np.concatenate([[0.0], np.cumsum(log_not)[:-1]])
        self._log_rest[x] = float(log_not.sum())
        return members, first, second

    def _vb_weights(self) -> np.ndarray:
        layout = self._layout
        compiled = self.grammar_
        row_totals = np.bincount(compiled.rule_parent, weights=self._counts, minlength=compiled.n_nonterminals)
        out = np.empty(compiled.n_rules)
        vb_table(self._counts, row_totals, compiled.rule_parent, self.alpha, layout["row_prior"].astype(float),
                 layout["cache_of"], layout["adapted_of"], self._log_stick, self._log_rest, out)
        return out

    def _dirichlet_kl(self, counts) -> float:
        """sum_A KL(Dir(alpha + C_A) || Dir(alpha)) over the base rows (VB's penalty, eq. 4.3)."""
        compiled, base = self.grammar_, self._layout["base"]
        parent = compiled.rule_parent[base]
        posterior = counts[base] + self.alpha
        rows = compiled.n_nonterminals
        post_total = np.bincount(parent, weights=posterior, minlength=rows)
        prior_total = self._layout["row_prior"].astype(float)
        used = prior_total > 0
        kl = (gammaln(post_total[used]) - gammaln(prior_total[used])).sum()
        kl -= (gammaln(posterior) - gammaln(self.alpha)).sum()
        kl += ((posterior - self.alpha) * (digamma(posterior) - digamma(post_total[parent]))).sum()
        return float(kl)

    def _beta_kl(self) -> float:
        """sum_X sum_k KL(Beta(first_k, second_k) || Beta(1 - a, b + k a)) of the current sticks."""
        total = 0.0
        for x, (_, first, second) in enumerate(self._sticks):
            if first.shape[0] == 0:
                continue
            a, b = self.discount[x], self.concentration[x]
            k = np.arange(1, first.shape[0] + 1)
            p, q = 1.0 - a, b + k * a
            total += float((betaln(p, q) - betaln(first, second) + (first - p) * digamma(first)
                            + (second - q) * digamma(second)
                            + (p + q - first - second) * digamma(first + second)).sum())
        return total

    # ------------------------------------------------------------- fitted state
    def _set_fitted(self):
        compiled, layout = self.grammar_, self._layout
        if self.algorithm_ in ("cvi", "mcmc"):
            model = self._model if self.algorithm_ == "cvi" else self._sampler.state
            weights = all_mean_weights(model, compiled.n_rules)
            customers = model[8]
            if self.algorithm_ == "mcmc":
                word = compiled.nonterminals.index(self.word)
                self.segmentation_ = [[tuple(u[i:k]) for i, k in spans]
                                      for u, spans in zip(self._train, self._sampler.words(word))]
                self.acceptance_rate_ = self._sampler.accepted / max(self._sampler.proposed, 1)
        else:
            weights = self._vb_weights()
            customers = self._customers
        self.rule_weights_ = weights
        word = self.adapted_names.index(self.word) if self.word in self.adapted_names else -1
        lexicon = {}
        if word >= 0:
            cells = np.flatnonzero(layout["cache_of"] == word)
            family = int(np.flatnonzero(compiled.kernel.span_parent == layout["adapted_symbol"][word])[0])
            first = compiled.kernel.span_base[family]
            for rule in cells[customers[cells] >= 0.01]:
                substring = compiled.substrings.substrings[rule - first]
                lexicon[tuple(compiled.vocabulary.decode(list(substring)))] = float(customers[rule])
        self.lexicon_ = lexicon

    def _check_fitted(self):
        if not hasattr(self, "rule_weights_"):
            raise RuntimeError("this AdaptorGrammar is not fitted yet; call fit() first")

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
        utterances = _as_utterances(utterances)
        compiled, weights, sentences = self.grammar_, self.rule_weights_, self._train
        if utterances != self._train:
            (compiled, weights), sentences = self._transfer(utterances), utterances
        decoder = _Decoder(self, compiled, weights, sentences)
        bounds = decoder.word_spans(compiled, weights, utterances)
        out, failed = [], 0
        for utterance, spans in zip(utterances, bounds):
            if spans is None:
                failed += 1
                spans = [(0, len(utterance))]
            out.append([tuple(utterance[i:k]) for i, k in spans])
        if failed:
            warnings.warn(f"{failed} utterance(s) had no parse and are returned as one word", stacklevel=2)
        return out

    def _transfer(self, utterances):
        """The fitted weights on a grammar compiled over other utterances (matched by substring)."""
        compiled, _ = self._compile(utterances)
        old = self.grammar_
        weights = np.zeros(compiled.n_rules)
        plain = compiled.rule_kind != SPAN
        weights[plain] = self.rule_weights_[old.rule_kind != SPAN]
        for family in range(compiled.kernel.span_parent.shape[0]):
            first, count = compiled.kernel.span_base[family], compiled.kernel.span_count[family]
            old_first, old_count = old.kernel.span_base[family], old.kernel.span_count[family]
            for s in range(count):
                symbols = compiled.vocabulary.decode(list(compiled.substrings.substrings[s]))
                if all(w in old.vocabulary for w in symbols):
                    t = old.substrings.index(old.vocabulary.encode(symbols))
                    if 0 <= t < old_count:
                        weights[first + s] = self.rule_weights_[old_first + t]
        return compiled, weights



class _Decoder:
    """Word spans of Viterbi parses, expanding cached constituents above the word level by the best
    parse of their yield under their base rules (`AdaptorGrammar.segment`)."""

    def __init__(self, model: AdaptorGrammar, compiled: CompiledGrammar, weights, sentences):
        self.model, self.compiled, self.weights, self.sentences = model, compiled, weights, sentences
        self.inner: dict[str, tuple] = {}
        grammar = model.spec.grammar
        reaches = {name: {s for r in grammar.rules if r.lhs == name for s in r.rhs if isinstance(s, str)}
                   for name in grammar.nonterminals}
        changed = True
        while changed:
            changed = False
            for name, below in reaches.items():
                grown = below.union(*(reaches[s] for s in below))
                changed |= grown != below
                reaches[name] = grown
        self.opaque = {name for name in model.adapted_names if name != model.word and model.word in reaches[name]}

    def word_spans(self, compiled, weights, utterances, start=None):
        """Sorted (begin, end) word spans of each utterance's best parse (None: no parse)."""
        tables = make_tables(compiled, weights)
        kernel = compiled.kernel
        word = compiled.nonterminals.index(self.model.word)
        opaque_symbols = {compiled.nonterminals.index(name) for name in self.opaque if name in compiled.nonterminals}
        parents = {BINARY: kernel.binary_parent, UNARY: kernel.unary_parent, LEXICAL: kernel.lexical_parent,
                   SPAN: kernel.span_parent}
        out, opaque = [], []
        for u, (utterance, derivation) in enumerate(zip(utterances, viterbi_batch(compiled, tables,
                                                                                  compiled.prepare(utterances)))):
            if derivation is None:
                out.append(None)
                continue
            spans = set()
            for kind, index, begin, _, end in derivation.applications:
                parent = int(parents[int(kind)][index])
                if parent == start:
                    continue
                if parent == word:
                    spans.add((int(begin), int(end)))
                elif kind == SPAN and parent in opaque_symbols:
                    opaque.append((compiled.nonterminals[parent], u, int(begin), int(end)))
            out.append(spans)
        for name in {item[0] for item in opaque}:   # one batch of inner parses per adapted nonterminal
            items = [item for item in opaque if item[0] == name]
            inner_compiled, inner_weights, inner_start = self._inner(name)
            pieces = [utterances[u][begin:end] for _, u, begin, end in items]
            inner = self.word_spans(inner_compiled, inner_weights, pieces, inner_start)
            for (_, u, begin, end), found in zip(items, inner):
                out[u].update((begin + i, begin + k) for i, k in (found or [(0, end - begin)]))
        return [None if spans is None else (sorted(spans) or [(0, len(utterance))])
                for utterance, spans in zip(utterances, out)]

    def _inner(self, name):
        """The grammar whose start rewrites by the base rules of adapted `name` only, with the fitted weights."""
        if name not in self.inner:
            inner, to_global, top = base_chart_grammar(self.model, self.compiled, self.sentences, name)
            self.inner[name] = (inner, self.weights[to_global], top)
        return self.inner[name]


def base_chart_grammar(model: AdaptorGrammar, compiled: CompiledGrammar, sentences, name):
    """The augmented grammar's rules below a new start ``name%base`` that rewrites by adapted `name`'s base
    rules only.

    Compiled over the same `sentences` and vocabulary as `compiled`, so that its span families index the
    same substrings in the same order.  Returns (inner, to_global, start symbol): ``to_global`` (inner
    rules,) int64 maps every inner rule to its rule in `compiled` (a ``name%base`` rule to ``name``'s).
    """
    top = f"{name}%base"
    augmented = model._augmented()
    rules = [Rule(top, r.rhs) for r in augmented.rules if r.lhs == name and r.kind != SPAN]
    # only what X's base rules reach: every other rule, above all every span family, would add a cell per
    # substring of every yield (on Brent the colloc-syllable grammar's charts took 3 times the memory)
    reached, stack = {top}, [top]
    while stack:
        lhs = stack.pop()
        for rule in rules if lhs == top else (r for r in augmented.rules if r.lhs == lhs):
            for child in rule.rhs:
                if isinstance(child, str) and child not in reached:
                    reached.add(child)
                    stack.append(child)
    rules += [r for r in augmented.rules if r.lhs in reached]
    inner = compile_grammar(Grammar(rules, start=top), sentences, vocabulary=compiled.vocabulary, layout="sparse")
    old_ids = {}
    for rule in np.flatnonzero(compiled.rule_kind != SPAN):
        source = compiled.grammar.rules[compiled.rule_source[rule]]
        old_ids[(source.lhs, source.rhs)] = rule
    to_global = np.zeros(inner.n_rules, dtype=np.int64)
    for rule in np.flatnonzero(inner.rule_kind != SPAN):
        source = inner.grammar.rules[inner.rule_source[rule]]
        to_global[rule] = old_ids[(name if source.lhs == top else source.lhs, source.rhs)]
    for family, parent in enumerate(inner.kernel.span_parent):   # same substrings, same order
        old_family = int(np.flatnonzero(compiled.kernel.span_parent ==
                                        compiled.nonterminals.index(inner.nonterminals[parent]))[0])
        first, count = inner.kernel.span_base[family], inner.kernel.span_count[family]
        old_first = compiled.kernel.span_base[old_family]
        to_global[first:first + count] = np.arange(old_first, old_first + count)
    return inner, to_global, inner.nonterminals.index(top)
