"""Adaptor grammar text: the grammar format, the built-in grammars and the regions CVI counts.

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
                                                            and b = 100, 0.1, 1000 for Colloc, Word and
                                                            the syllable parts (SYLLABLE_CONCENTRATIONS)
"""
from __future__ import annotations

import os
import re

from ...data.errors import read_text_file
from ...trees.grammar import LEXICAL, SPAN, Grammar, GrammarError, format_grammar, parse_grammar

__all__ = ["AdaptorGrammarSpec", "BRENT_CONSONANTS", "BRENT_VOWELS", "BUILT_IN_GRAMMARS", "adapted_regions",
           "as_spec", "parse_adaptor_grammar", "read_grammar_text", "spec_text", "syllable_grammar"]

# Brent's phonemic alphabet (Brent 1999) split into syllable nuclei (vowels, r-coloured vowels and the
# syllabic consonants ~ M L) and consonants, for the colloc-syllable grammar
BRENT_VOWELS = tuple("& 6 7 9 A E I O Q U a e i o u 3 R # % ( ) * ~ L M".split())
BRENT_CONSONANTS = tuple("b c d f g h k l m n p r s t v w y z D G N S T W Z".split())

# colloc-syllable's PY concentrations (a = 0): a syllable part's cache at b = 1 makes the frequent onsets and
# nuclei so cheap that two short words cost less as one two-syllable word, and cvi leaves 0.79 words a gold
# word (token F1 62.7 on Brent); chosen on the first 2,000 Brent utterances, checked on all of Brent and on
# Buckeye (docs/results/wordseg/syllable_settings.md)
SYLLABLE_CONCENTRATIONS = {"Colloc": 100.0, "Word": 0.1, "Onset": 1000.0, "OnsetI": 1000.0, "Coda": 1000.0,
                           "CodaF": 1000.0, "Nucleus": 1000.0}


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

    The grammar sets the adapted nonterminals' concentrations b (`SYLLABLE_CONCENTRATIONS`: 100 for Colloc,
    0.1 for Word, 1000 for the syllable parts, which then follow their base distributions closely); their
    discounts, and the b of a grammar with ``edges=False``, are the model's.

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
        rules = [f"@{name} b={b:g}" for name, b in SYLLABLE_CONCENTRATIONS.items()] + rules
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


def as_spec(grammar) -> AdaptorGrammarSpec:
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


def spec_text(spec: AdaptorGrammarSpec) -> str:
    """The text of `spec` in the format of `parse_adaptor_grammar` (it parses back to an equal spec): the
    rules (``Y+`` ones written out) and one ``@X a=.. b=..`` line per adapted nonterminal."""
    lines = []
    for name, (a, b) in spec.adapted.items():
        settings = "".join(f" {key}={value!r}" for key, value in (("a", a), ("b", b)) if value is not None)
        lines.append(f"@{name}{settings}")
    return "\n".join(lines) + "\n" + format_grammar(spec.grammar)
