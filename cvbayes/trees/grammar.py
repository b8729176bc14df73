"""Context-free grammars for the tree kernels: rules, a text format, and their compiled arrays.

Two levels, as for chains the model and its tables:

* `Grammar` is what a person writes: named nonterminals, a start symbol and a
  list of `Rule` objects, read from and written to a small text format
  (`parse_grammar`, `read_grammar`, `format_grammar`, `write_grammar`).
* `CompiledGrammar` is what the kernels and the learners use: every rule has a
  **global id**, rules are **grouped by parent** so that each nonterminal's
  rules are one contiguous Dirichlet row (thesis eq. 4.2: ``row_offsets``,
  ``rule_parent``), and a `KernelGrammar` of plain arrays holds the binarised
  rules the numba kernels walk.  `compile_grammar` builds one from a `Grammar`;
  `full_cnf_grammar` builds the grammar-induction grammar (every A -> B C and
  every A -> w, thesis §4.2) directly as arrays.

Rule kinds (``rule_kind``)
--------------------------
``BINARY`` A -> B C; ``UNARY`` A -> B; ``LEXICAL`` A -> w (w one token);
``SPAN`` A -> s, s a whole substring of the input (Johnson, Griffiths and
Goldwater 2007; thesis §4.5.1, eq. 4.25-4.29); ``NARY`` every other rule with
two or more right-hand symbols (three or more, or terminals mixed in).

Binarisation
------------
An ``NARY`` rule ``A -> X1 X2 ... Xn`` is right-binarised with fresh
intermediate symbols: ``A -> Y1 @r:1``, ``@r:1 -> Y2 @r:2``, ..., ``@r:n-2 ->
Y(n-1) Yn``.  Only the first piece carries the rule's weight; the others are
deterministic (weight 1) and have no global id, so the intermediate symbols
have no Dirichlet row and the expected count of the first piece is the
expected count of the user's rule.  A terminal ``"t"`` inside such a rule
becomes a deterministic preterminal ``@"t"`` -> t.  Every internal symbol's
name starts with ``@``, which user names may not; `cvbayes.data.trees.unbinarize`
splices them out of trees.

Span rules
----------
``A -> <any>`` says that A may rewrite to any substring of the input.  The
distinct substrings of the training inputs are the terminals of that family
(`SubstringIndex`), so |R_A| is finite and known for the Dirichlet prior;
substrings met later that the index lacks have weight zero.  ``<any:3>``
limits the family to substrings of at most 3 tokens.  Substring ids are
ordered by length, so a family limited to m tokens is an id prefix.

Unary rules
-----------
Unary rules are closed in the kernels: the inside of a cell is
``(I - U)^{-1}`` times the inside without a unary rule on top, so chains of any
length, cycles included, are summed exactly.  That sum converges only when the
spectral radius of the unary weight matrix U is below one; `build_tables`
raises otherwise.
"""
from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..files import write_text
from ..data.errors import CorpusFormatError, read_text_file
from ..data.vocabulary import Vocabulary

__all__ = [
    "AnySubstring",
    "BINARY",
    "CompiledGrammar",
    "Grammar",
    "GrammarError",
    "KernelGrammar",
    "LEXICAL",
    "NARY",
    "Rule",
    "SPAN",
    "SubstringIndex",
    "Terminal",
    "UNARY",
    "compile_grammar",
    "format_grammar",
    "full_cnf_grammar",
    "parse_grammar",
    "read_grammar",
    "write_grammar",
]

BINARY = 0
UNARY = 1
LEXICAL = 2
SPAN = 3
NARY = 4

INTERNAL_PREFIX = "@"
ARROW = "->"


class GrammarError(CorpusFormatError):
    """A grammar (file or object) is malformed; names the file and line when known."""


# ------------------------------------------------------------------ symbolic level
@dataclass(frozen=True)
class Terminal:
    """A terminal symbol: one token of the input (written quoted, ``"the"``)."""

    text: str

    def __post_init__(self):
        if not isinstance(self.text, str) or not self.text:
            raise GrammarError("a terminal must be a non-empty string")


@dataclass(frozen=True)
class AnySubstring:
    """The right-hand side "any substring of the input" (written ``<any>`` or ``<any:m>``)."""

    max_length: int | None = None

    def __post_init__(self):
        if self.max_length is not None and (not isinstance(self.max_length, int) or self.max_length < 1):
            raise GrammarError(f"<any:m> needs a positive integer m, got {self.max_length!r}")


Symbol = str | Terminal | AnySubstring


@dataclass(frozen=True)
class Rule:
    """One production ``lhs -> rhs``; nonterminals are plain strings.

    ``weight`` is an optional rule probability (written before the rule in the
    text format); ``line`` is where the rule was read, for messages, and takes
    no part in equality.
    """

    lhs: str
    rhs: tuple[Symbol, ...]
    weight: float | None = None
    line: int | None = field(default=None, compare=False)

    @property
    def kind(self) -> int:
        """The rule's kind (``BINARY``, ``UNARY``, ``LEXICAL``, ``SPAN`` or ``NARY``)."""
        if len(self.rhs) == 1:
            symbol = self.rhs[0]
            if isinstance(symbol, AnySubstring):
                return SPAN
            return LEXICAL if isinstance(symbol, Terminal) else UNARY
        if len(self.rhs) == 2 and all(isinstance(s, str) for s in self.rhs):
            return BINARY
        return NARY

    def __str__(self) -> str:
        text = f"{self.lhs} {ARROW} {' '.join(_format_symbol(s) for s in self.rhs)}"
        return text if self.weight is None else f"{self.weight!r} {text}"


_NAME = re.compile(r"[^\s\"'#<>@][^\s\"'#<>]*")


def _check_name(name: str, path, line) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name == ARROW:
        raise GrammarError(
            f"invalid nonterminal name {name!r} (no spaces, quotes, '#', '<', '>', not starting with "
            f"'{INTERNAL_PREFIX}', and not '{ARROW}')", path, line)


class Grammar:
    """A context-free grammar as written: nonterminals, a start symbol and rules.

    Parameters
    ----------
    rules : sequence of Rule
        Right-hand nonterminals are strings, terminals `Terminal`, and
        ``<any>`` an `AnySubstring`.
    start : str, optional
        The start symbol; default the left-hand side of the first rule.
    path : str, optional
        Where the rules came from, for error messages.

    Attributes
    ----------
    nonterminals : tuple of str
        In order of first appearance as a left-hand side, start symbol first.
    rules : tuple of Rule
        Grouped by left-hand side in the order of `nonterminals`, each group
        in its given order: this is the order of the global rule ids.
    terminals : tuple of str
        The quoted terminals, in order of first appearance.

    Raises
    ------
    GrammarError
        On an empty grammar, a right-hand nonterminal without rules, a
        duplicate rule, ``<any>`` beside other symbols, ``<any>`` and
        single-token rules for one parent (``<any>`` already includes every
        single token), an empty right-hand side, weights on some rules only,
        or invalid names.
    """

    def __init__(self, rules: Sequence[Rule], start: str | None = None, path=None):
        rules = list(rules)
        if not rules:
            raise GrammarError("the grammar has no rules", path)
        by_lhs: dict[str, list[Rule]] = {}
        for rule in rules:
            _check_name(rule.lhs, path, rule.line)
            if not rule.rhs:
                raise GrammarError("empty right-hand side (rules A -> nothing are not supported)",
                                   path, rule.line)
            for symbol in rule.rhs:
                if isinstance(symbol, str):
                    _check_name(symbol, path, rule.line)
                elif isinstance(symbol, AnySubstring):
                    if len(rule.rhs) != 1:
                        raise GrammarError("<any> must be the whole right-hand side", path, rule.line)
                elif not isinstance(symbol, Terminal):
                    raise GrammarError(f"unknown right-hand symbol {symbol!r}", path, rule.line)
            if rule.weight is not None and not (math.isfinite(rule.weight) and rule.weight >= 0):
                raise GrammarError(f"rule weight must be finite and non-negative, got {rule.weight}",
                                   path, rule.line)
            by_lhs.setdefault(rule.lhs, []).append(rule)
        if start is None:
            start = rules[0].lhs
        if start not in by_lhs:
            raise GrammarError(f"start symbol {start!r} has no rules", path)
        if len({rule.weight is None for rule in rules}) > 1:
            first = next(rule for rule in rules if (rule.weight is None) != (rules[0].weight is None))
            raise GrammarError("either every rule has a weight or none has", path, first.line)
        order = [start] + [lhs for lhs in by_lhs if lhs != start]
        seen: dict[tuple, Rule] = {}
        for lhs in order:
            group = by_lhs[lhs]
            has_any = [rule for rule in group if rule.kind == SPAN]
            if len(has_any) > 1:
                raise GrammarError(f"{lhs} has more than one <any> rule", path, has_any[1].line)
            for rule in group:
                key = (rule.lhs, rule.rhs)
                if key in seen:
                    where = "" if seen[key].line is None else f" (first on line {seen[key].line})"
                    raise GrammarError(f"duplicate rule {rule.lhs} {ARROW} "
                                       f"{' '.join(map(_format_symbol, rule.rhs))}{where}", path, rule.line)
                seen[key] = rule
                if has_any and rule.kind == LEXICAL:
                    raise GrammarError(f"{lhs} has both <any> and single-token rules; <any> already "
                                       "includes every single token", path, rule.line)
                for symbol in rule.rhs:
                    if isinstance(symbol, str) and symbol not in by_lhs:
                        raise GrammarError(f"nonterminal {symbol!r} has no rules (quote it, \"{symbol}\", "
                                           "if it is a terminal)", path, rule.line)
        self.start = start
        self.nonterminals = tuple(order)
        self.rules = tuple(rule for lhs in order for rule in by_lhs[lhs])
        terminals: dict[str, None] = {}
        for rule in self.rules:
            for symbol in rule.rhs:
                if isinstance(symbol, Terminal):
                    terminals.setdefault(symbol.text, None)
        self.terminals = tuple(terminals)
        self.path = None if path is None else os.fspath(path)

    @property
    def has_weights(self) -> bool:
        """Whether the rules carry weights."""
        return self.rules[0].weight is not None

    @property
    def has_span_rules(self) -> bool:
        """Whether some nonterminal rewrites to ``<any>``."""
        return any(rule.kind == SPAN for rule in self.rules)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Grammar):
            return NotImplemented
        return self.start == other.start and self.rules == other.rules

    def __repr__(self) -> str:
        return f"Grammar({len(self.nonterminals)} nonterminals, {len(self.rules)} rules, start={self.start!r})"

    def __str__(self) -> str:
        return format_grammar(self)


# ------------------------------------------------------------------ text format
_TOKEN = re.compile(r"""\s*(?:(?P<comment>\#.*)|"(?P<dq>(?:[^"\\]|\\.)*)"|'(?P<sq>(?:[^'\\]|\\.)*)'|(?P<bare>[^\s"'#]+))""")
_ANY = re.compile(r"<any(?::([0-9]+))?>")
_ESCAPE = re.compile(r"\\(.)")


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: m.group(1), text)


def _format_symbol(symbol: Symbol) -> str:
    if isinstance(symbol, Terminal):
        return '"' + symbol.text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(symbol, AnySubstring):
        return "<any>" if symbol.max_length is None else f"<any:{symbol.max_length}>"
    return symbol


def _split_line(text: str, path, line) -> list[tuple[str, str]]:
    """(kind, text) tokens of one line: 'bare' or 'terminal'; comments dropped."""
    tokens = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            if text[position:].strip():
                raise GrammarError(f"unterminated quote in {text[position:].strip()!r}", path, line)
            break
        position = match.end()
        if match.group("comment") is not None:
            break
        if match.group("dq") is not None or match.group("sq") is not None:
            raw = match.group("dq") if match.group("dq") is not None else match.group("sq")
            if not raw:
                raise GrammarError("empty terminal \"\"", path, line)
            tokens.append(("terminal", _unescape(raw)))
        elif match.group("bare") is not None:
            tokens.append(("bare", match.group("bare")))
    return tokens


def parse_grammar(text: str, path=None, start: str | None = None) -> Grammar:
    """Parse the grammar text format.

    One rule a line: ``[weight] LHS -> X1 X2 ...``.  ``#`` starts a comment.
    Nonterminals are bare names; terminals are quoted (``"the"`` or
    ``'the'``, with ``\\"`` and ``\\\\`` escapes), so a bare name that has no
    rules is an error rather than a silent terminal (typos are caught).
    ``<any>`` is "any substring of the input" and ``<any:m>`` any substring of
    at most m tokens; either must be a rule's whole right-hand side.  An
    optional leading number is the rule's weight (all rules or none).  The
    start symbol is the left-hand side of the first rule unless `start` says
    otherwise.  Example (thesis eq. 4.25-4.29)::

        # Sesotho verbs: each nonterminal may rewrite to any substring
        Word -> V
        Word -> V M
        Word -> SM V M
        Word -> SM T V M
        Word -> SM T OM V M
        SM -> <any>
        ...

    Parameters
    ----------
    text : str
    path : str, optional
        File name used in error messages.
    start : str, optional

    Returns
    -------
    Grammar

    Raises
    ------
    GrammarError
        Naming the file and line of the first problem.
    """
    rules = []
    for number, raw in enumerate(text.split("\n"), start=1):
        tokens = _split_line(raw.removesuffix("\r"), path, number)
        if not tokens:
            continue
        weight = None
        if tokens[0][0] == "bare" and _is_number(tokens[0][1]):
            weight = float(tokens[0][1])
            tokens = tokens[1:]
        if len(tokens) < 2 or tokens[1] != ("bare", ARROW):
            raise GrammarError(f"expected 'LHS {ARROW} symbols...', got {raw.strip()!r}", path, number)
        kind, lhs = tokens[0]
        if kind != "bare":
            raise GrammarError(f"the left-hand side must be a nonterminal, not the terminal {lhs!r}", path,
                               number)
        rhs: list[Symbol] = []
        for kind, value in tokens[2:]:
            if kind == "terminal":
                rhs.append(Terminal(value))
            elif value == ARROW:
                raise GrammarError(f"more than one '{ARROW}'", path, number)
            elif value.startswith("<"):
                match = _ANY.fullmatch(value)
                if match is None:
                    raise GrammarError(f"unknown special symbol {value!r} (expected <any> or <any:m>)", path,
                                       number)
                limit = None if match.group(1) is None else int(match.group(1))
                if limit == 0:
                    raise GrammarError("<any:m> needs m >= 1", path, number)
                rhs.append(AnySubstring(limit))
            else:
                _check_name(value, path, number)
                rhs.append(value)
        rules.append(Rule(lhs, tuple(rhs), weight, line=number))
    if not rules:
        raise GrammarError("the grammar has no rules", path)
    return Grammar(rules, start=start, path=path)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_grammar(path, encoding: str = "utf-8", start: str | None = None) -> Grammar:
    """Read a grammar file in the format of `parse_grammar`."""
    return parse_grammar(read_text_file(path, encoding, GrammarError), path=path, start=start)


def format_grammar(grammar: Grammar, weights: Sequence[float] | None = None) -> str:
    """The text of `grammar` in the format of `parse_grammar` (it parses back to an equal grammar).

    Parameters
    ----------
    grammar : Grammar
    weights : sequence of float, optional
        One weight per rule of ``grammar.rules`` written instead of the
        rules' own (e.g. learned probabilities); ``repr`` keeps them exact.
    """
    lines = []
    if weights is not None and len(weights) != len(grammar.rules):
        raise ValueError(f"got {len(weights)} weights for {len(grammar.rules)} rules")
    for i, rule in enumerate(grammar.rules):
        weight = rule.weight if weights is None else float(weights[i])
        lines.append(str(Rule(rule.lhs, rule.rhs, weight)))
    return "\n".join(lines) + "\n"


def write_grammar(grammar: Grammar, path, weights: Sequence[float] | None = None) -> None:
    """Write `grammar` to `path` (UTF-8, atomically) with `format_grammar`."""
    write_text(path, format_grammar(grammar, weights))


# ------------------------------------------------------------------ substrings
class SubstringIndex:
    """The distinct substrings of some token-id sequences: the terminals of ``<any>`` rules.

    Ids are ordered by length, then by first appearance, so the substrings of
    at most m tokens are ids ``0 .. count(m) - 1``.

    Parameters
    ----------
    sentences : iterable of 1-D int arrays
        Token ids (of the grammar's vocabulary).
    max_length : int, optional
        Longest substring kept (default: the longest sentence).
    """

    def __init__(self, sentences: Iterable, max_length: int | None = None):
        by_length: dict[int, dict[tuple, None]] = {}
        for sentence in sentences:
            ids = tuple(int(t) for t in np.asarray(sentence).ravel())
            top = len(ids) if max_length is None else min(len(ids), max_length)
            for width in range(1, top + 1):
                bucket = by_length.setdefault(width, {})
                for begin in range(len(ids) - width + 1):
                    bucket.setdefault(ids[begin:begin + width], None)
        self.substrings: list[tuple[int, ...]] = []
        self._count_upto = [0]
        for width in range(1, max(by_length, default=0) + 1):
            self.substrings.extend(by_length.get(width, {}))
            self._count_upto.append(len(self.substrings))
        self._index = {s: i for i, s in enumerate(self.substrings)}
        self.max_length = len(self._count_upto) - 1

    def __len__(self) -> int:
        return len(self.substrings)

    def count(self, max_length: int | None = None) -> int:
        """Number of substrings of at most `max_length` tokens (all when None)."""
        if max_length is None or max_length >= self.max_length:
            return len(self.substrings)
        return self._count_upto[max_length]

    def index(self, substring: Sequence[int]) -> int:
        """The id of a substring (a sequence of token ids), -1 if unknown."""
        return self._index.get(tuple(int(t) for t in substring), -1)

    def span_ids(self, sentence) -> np.ndarray:
        """Substring id of every span (j, l) of a sentence, flat (T + 1)^2 at ``j * (T + 1) + l``; -1 if unknown."""
        ids = tuple(int(t) for t in np.asarray(sentence).ravel())
        n = len(ids)
        out = np.full((n + 1) * (n + 1), -1, dtype=np.int64)
        get = self._index.get
        for begin in range(n):
            for end in range(begin + 1, min(n, begin + self.max_length) + 1):
                out[begin * (n + 1) + end] = get(ids[begin:end], -1)
        return out


# ------------------------------------------------------------------ compiled level
class KernelGrammar(NamedTuple):
    """The binarised grammar as the numba kernels read it (all arrays contiguous).

    Kernel symbols are the user's nonterminals (ids ``0 .. n_nonterminals-1``)
    followed by the internal ``@`` symbols.  Every kernel rule names the global
    rule whose weight it carries, or -1 for a deterministic rule (weight 1, no
    count).

    Fields
    ------
    n_symbols, start : int
    dense : bool
        Use the dense (N, N*N) binary tensor (full CNF grammars) rather than
        the rule list.
    binary_parent, binary_left, binary_right : int32 (B,)
    binary_rule : int64 (B,)
    dense_index : int64 (N, N*N) kernel binary rule of (A, B*N + C), -1 if none ((0, 0) when sparse)
    unary_parent, unary_child : int32 (U,)
    unary_rule : int64 (U,)
    lexical_offsets : int64 (W + 1,) lexical entries of terminal w are
        ``lexical_offsets[w] .. lexical_offsets[w + 1] - 1``
    lexical_parent : int32 (L,)
    lexical_rule : int64 (L,)
    span_parent : int32 (P,) the parent of each ``<any>`` family
    span_base : int64 (P,) global id of the family's substring 0
    span_count : int64 (P,) substrings in the family (an id prefix)
    """

    n_symbols: int
    start: int
    dense: bool
    binary_parent: np.ndarray
    binary_left: np.ndarray
    binary_right: np.ndarray
    binary_rule: np.ndarray
    dense_index: np.ndarray
    unary_parent: np.ndarray
    unary_child: np.ndarray
    unary_rule: np.ndarray
    lexical_offsets: np.ndarray
    lexical_parent: np.ndarray
    lexical_rule: np.ndarray
    span_parent: np.ndarray
    span_base: np.ndarray
    span_count: np.ndarray


class SentenceBatch(NamedTuple):
    """Sentences as the batch kernels read them.

    ``tokens`` int32 flat token ids, ``offsets`` int64 (I + 1,);
    ``span_ids`` int64 flat, sentence i's (T_i + 1)^2 substring ids at
    ``span_offsets[i] .. span_offsets[i + 1]`` (empty when the grammar has no
    ``<any>`` rules).
    """

    tokens: np.ndarray
    offsets: np.ndarray
    span_ids: np.ndarray
    span_offsets: np.ndarray

    def __len__(self) -> int:
        return self.offsets.shape[0] - 1

    def sentence(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(tokens, span_ids) of sentence i."""
        return (self.tokens[self.offsets[i]:self.offsets[i + 1]],
                self.span_ids[self.span_offsets[i]:self.span_offsets[i + 1]])

    def take(self, ids) -> SentenceBatch:
        """The sentences ``ids`` (repeats allowed) as one batch, cut from this one: nothing is encoded or
        looked up again."""
        ids = np.asarray(ids, dtype=np.int64)
        tokens, offsets = _take_rows(self.tokens, self.offsets, ids)
        if self.span_ids.shape[0]:
            span_ids, span_offsets = _take_rows(self.span_ids, self.span_offsets, ids)
        else:
            span_ids, span_offsets = self.span_ids, np.zeros(ids.shape[0] + 1, dtype=np.int64)
        return SentenceBatch(tokens, offsets, span_ids, span_offsets)


def _take_rows(values, offsets, ids):
    """The rows ``ids`` of a ragged array (flat ``values``, row i at ``offsets[i] .. offsets[i + 1]``), and
    their offsets."""
    lengths = offsets[ids + 1] - offsets[ids]
    out_offsets = np.zeros(ids.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    positions = np.repeat(offsets[ids] - out_offsets[:-1], lengths) + np.arange(out_offsets[-1])
    return values[positions], out_offsets


@dataclass(eq=False)
class CompiledGrammar:
    """A grammar with globally numbered rules and its kernel arrays.

    Attributes
    ----------
    nonterminals : tuple of str
        The user's nonterminals; each is one Dirichlet row.
    symbols : tuple of str
        Kernel symbols: `nonterminals` then the internal ``@`` symbols.
    start : int
    vocabulary : Vocabulary
        Maps tokens to the terminal ids of lexical rules and substrings.
    substrings : SubstringIndex or None
        The terminals of ``<any>`` families.
    rule_parent : int32 (R,)
        Each global rule's parent nonterminal (its Dirichlet row).
    rule_kind : int8 (R,)
    row_offsets : int64 (n_nonterminals + 1,)
        Rules of nonterminal A are global ids ``row_offsets[A] .. row_offsets[A + 1] - 1``.
    rule_source : int64 (R,)
        Index of the `Grammar` rule each global rule comes from (-1 for `full_cnf_grammar`).
    kernel : KernelGrammar
    grammar : Grammar or None
        The grammar it was compiled from.
    """

    nonterminals: tuple
    symbols: tuple
    start: int
    vocabulary: Vocabulary
    substrings: SubstringIndex | None
    rule_parent: np.ndarray
    rule_kind: np.ndarray
    row_offsets: np.ndarray
    rule_source: np.ndarray
    kernel: KernelGrammar
    grammar: Grammar | None = None

    @property
    def n_rules(self) -> int:
        """R, the number of global rules."""
        return self.rule_parent.shape[0]

    @property
    def n_nonterminals(self) -> int:
        return len(self.nonterminals)

    @property
    def row_sizes(self) -> np.ndarray:
        """|R_A| of every nonterminal (the Dirichlet dimension of eq. 4.2)."""
        return np.diff(self.row_offsets)

    @property
    def has_span_rules(self) -> bool:
        return self.kernel.span_parent.shape[0] > 0

    def normalize(self, weights) -> np.ndarray:
        """Divide each row of a (R,) table by its sum (rows summing to 0 are left at 0)."""
        weights = np.asarray(weights, dtype=np.float64)
        totals = np.add.reduceat(weights, self.row_offsets[:-1]) if self.n_rules else np.zeros(0)
        totals = np.where(self.row_sizes > 0, totals, 0.0)
        safe = np.where(totals > 0, totals, 1.0)
        return weights / np.repeat(safe, self.row_sizes)

    def rule_weights(self) -> np.ndarray:
        """The weights written in the grammar, one per global rule (``<any>`` families: uniform 1)."""
        if self.grammar is None or not self.grammar.has_weights:
            raise ValueError("the grammar has no rule weights")
        out = np.ones(self.n_rules)
        known = self.rule_source >= 0
        sources = [rule.weight for rule in self.grammar.rules]
        out[known] = np.asarray(sources)[self.rule_source[known]]
        out[self.rule_kind == SPAN] = 1.0
        return out

    def describe(self, rule: int) -> str:
        """A global rule as text, e.g. ``'Word -> SM V M'`` or ``"V -> 'l' 'e'"``."""
        parent = self.nonterminals[self.rule_parent[rule]]
        kind = self.rule_kind[rule]
        if kind == SPAN:
            family = int(np.searchsorted(self.kernel.span_parent, self.rule_parent[rule]))
            substring = self.substrings.substrings[rule - self.kernel.span_base[family]]
            return f"{parent} {ARROW} " + " ".join(_format_symbol(Terminal(w))
                                                   for w in self.vocabulary.decode(list(substring)))
        if self.grammar is not None:
            return str(Rule(parent, self.grammar.rules[self.rule_source[rule]].rhs))
        offset = rule - self.row_offsets[self.rule_parent[rule]]
        n = self.n_nonterminals
        if kind == BINARY:
            return f"{parent} {ARROW} {self.nonterminals[offset // n]} {self.nonterminals[offset % n]}"
        word = self.vocabulary.symbol(int(offset - n * n))
        return f"{parent} {ARROW} {_format_symbol(Terminal(word))}"

    def rule_id(self, lhs: str, children: Sequence) -> int:
        """Global id of the rule ``lhs -> children``.

        Children are nodes (anything with a ``label``: nonterminals) or str
        words (terminals), as in a `cvbayes.data.trees.Tree`; several words
        form a span rule (``<any>``), as does one word under a parent with an
        ``<any>`` family.

        Raises
        ------
        ValueError
            If the grammar has no such rule.
        """
        if lhs not in self._nonterminal_ids:
            raise ValueError(f"unknown nonterminal {lhs!r}")
        parent = self._nonterminal_ids[lhs]
        words = [c for c in children if isinstance(c, str)]
        text = f"{lhs} {ARROW} " + " ".join(c if isinstance(c, str) else c.label for c in children)
        if words and len(words) == len(children):
            families = np.flatnonzero(self.kernel.span_parent == parent)
            if len(families) and (len(words) > 1 or self._rule_key(parent, children) not in self._rule_ids):
                if any(w not in self.vocabulary for w in words):
                    raise ValueError(f"no rule {text}: a word is not in the vocabulary")
                substring = self.substrings.index(self.vocabulary.encode(words))
                family = families[0]
                if 0 <= substring < self.kernel.span_count[family]:
                    return int(self.kernel.span_base[family] + substring)
                raise ValueError(f"no rule {text}: the substring is not in the <any> family")
        key = self._rule_key(parent, children)
        if key is None or key not in self._rule_ids:
            raise ValueError(f"no rule {text}")
        return self._rule_ids[key]

    def _rule_key(self, parent: int, children: Sequence):
        items = []
        for child in children:
            if isinstance(child, str):
                if child not in self.vocabulary:
                    return None
                items.append((1, self.vocabulary.index(child)))
            elif child.label in self._nonterminal_ids:
                items.append((0, self._nonterminal_ids[child.label]))
            else:
                return None
        return parent, tuple(items)

    @property
    def _nonterminal_ids(self) -> dict:
        if "_names" not in self.__dict__:
            self.__dict__["_names"] = {name: i for i, name in enumerate(self.nonterminals)}
        return self.__dict__["_names"]

    @property
    def _rule_ids(self) -> dict:
        """(parent, ((0, nonterminal) | (1, word), ...)) -> global id, for every rule but <any> families."""
        if "_rules" in self.__dict__:
            return self.__dict__["_rules"]
        table = {}
        if self.grammar is not None:
            for rule_id in np.flatnonzero(self.rule_kind != SPAN):
                rule = self.grammar.rules[self.rule_source[rule_id]]
                items = tuple((1, self.vocabulary.index(s.text)) if isinstance(s, Terminal)
                              else (0, self._nonterminal_ids[s]) for s in rule.rhs)
                table[(int(self.rule_parent[rule_id]), items)] = int(rule_id)
        else:  # full CNF: computed, not stored
            table = _FullCnfRules(self)
        self.__dict__["_rules"] = table
        return table

    def encode(self, sentence) -> np.ndarray:
        """Token ids (int32) of a sentence given as strings or as ids."""
        array = np.asarray(sentence)
        if array.dtype.kind in "iu":
            return array.astype(np.int32)
        return self.vocabulary.encode(list(sentence)).astype(np.int32)

    def prepare(self, sentences: Iterable) -> SentenceBatch:
        """Encode sentences (strings or ids) and attach their span ids for the batch kernels."""
        encoded = [self.encode(s) for s in sentences]
        lengths = np.array([len(s) for s in encoded], dtype=np.int64)
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        tokens = np.concatenate(encoded).astype(np.int32) if encoded else np.zeros(0, np.int32)
        span_offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        if self.substrings is not None:
            np.cumsum((lengths + 1) ** 2, out=span_offsets[1:])
            span_ids = (np.concatenate([self.substrings.span_ids(s) for s in encoded])
                        if encoded else np.zeros(0, np.int64))
        else:
            span_ids = np.zeros(0, dtype=np.int64)
        return SentenceBatch(tokens, offsets, span_ids, span_offsets)


class _FullCnfRules:
    """The rule-id lookup of a full CNF grammar, by arithmetic on its row layout."""

    def __init__(self, grammar: CompiledGrammar):
        self.grammar = grammar

    def _find(self, key):
        parent, items = key
        n = self.grammar.n_nonterminals
        base = int(self.grammar.row_offsets[parent])
        if len(items) == 2 and items[0][0] == 0 and items[1][0] == 0:
            return base + items[0][1] * n + items[1][1]
        if len(items) == 1 and items[0][0] == 1:
            return base + n * n + items[0][1]
        return None

    def __contains__(self, key) -> bool:
        return self._find(key) is not None

    def __getitem__(self, key) -> int:
        found = self._find(key)
        if found is None:
            raise KeyError(key)
        return found


def _kernel(n_symbols, start, dense, binary, unary, lexical, n_terminals, spans) -> KernelGrammar:
    """Arrays of a KernelGrammar from rule lists of (parent, ..., rule) tuples."""
    binary = np.asarray(binary, dtype=np.int64).reshape(-1, 4)
    unary = np.asarray(unary, dtype=np.int64).reshape(-1, 3)
    lexical = np.asarray(lexical, dtype=np.int64).reshape(-1, 3)   # (terminal, parent, rule)
    spans = np.asarray(spans, dtype=np.int64).reshape(-1, 3)        # (parent, base, count)
    lexical = lexical[np.lexsort((lexical[:, 1], lexical[:, 0]))] if len(lexical) else lexical
    offsets = np.zeros(n_terminals + 1, dtype=np.int64)
    np.cumsum(np.bincount(lexical[:, 0], minlength=n_terminals)[:n_terminals], out=offsets[1:])
    dense_index = np.zeros((0, 0), dtype=np.int64)
    if dense:
        dense_index = np.full((n_symbols, n_symbols * n_symbols), -1, dtype=np.int64)
        dense_index[binary[:, 0], binary[:, 1] * n_symbols + binary[:, 2]] = np.arange(len(binary))
    return KernelGrammar(
        int(n_symbols), int(start), bool(dense),
        np.ascontiguousarray(binary[:, 0], np.int32), np.ascontiguousarray(binary[:, 1], np.int32),
        np.ascontiguousarray(binary[:, 2], np.int32), np.ascontiguousarray(binary[:, 3]), dense_index,
        np.ascontiguousarray(unary[:, 0], np.int32), np.ascontiguousarray(unary[:, 1], np.int32),
        np.ascontiguousarray(unary[:, 2]),
        offsets, np.ascontiguousarray(lexical[:, 1], np.int32), np.ascontiguousarray(lexical[:, 2]),
        np.ascontiguousarray(spans[:, 0], np.int32), np.ascontiguousarray(spans[:, 1]),
        np.ascontiguousarray(spans[:, 2]))


def _choose_dense(layout: str, n_symbols: int, n_binary: int) -> bool:
    if layout not in ("auto", "dense", "sparse"):
        raise ValueError(f"layout must be 'auto', 'dense' or 'sparse', got {layout!r}")
    if layout == "auto":
        # The dense step costs O(N^2) a split and O(N^3) a cell whatever the
        # rules; the rule list costs O(B) a split.  Dense wins once B is a
        # sizeable share of N^3 (and N^2 * splits dominates).
        return n_binary >= max(64, n_symbols ** 3 // 8)
    return layout == "dense"


def compile_grammar(grammar: Grammar, sentences: Iterable | None = None, *,
                    vocabulary: Vocabulary | None = None, max_substring: int | None = None,
                    layout: str = "auto") -> CompiledGrammar:
    """Number a grammar's rules globally, binarise it and build its kernel arrays.

    Parameters
    ----------
    grammar : Grammar
    sentences : iterable, optional
        Training inputs, as token strings or as ids of `vocabulary`.  Needed
        when the grammar has ``<any>`` rules: their distinct substrings are
        the terminals of those families (Johnson et al. 2007).  Include every
        input you will score, or unseen substrings get weight zero.
    vocabulary : Vocabulary, optional
        Token ids.  Default: the grammar's quoted terminals, then the new
        tokens of `sentences` in order of appearance (id 0 is ``<unk>``).
    max_substring : int, optional
        Cap on substring length for ``<any>`` families without their own
        ``<any:m>`` (default: none).
    layout : {'auto', 'dense', 'sparse'}
        Binary rules as a dense (N, N*N) tensor or as a rule list; 'auto'
        picks dense when binary rules fill at least an eighth of N^3.

    Returns
    -------
    CompiledGrammar
    """
    sentences = None if sentences is None else list(sentences)
    if vocabulary is None:
        symbols = dict.fromkeys(grammar.terminals)
        for sentence in sentences or ():
            if np.asarray(sentence).dtype.kind in "iu":
                raise ValueError("sentences given as ids need the vocabulary that encodes them")
            symbols.update(dict.fromkeys(sentence))
        symbols.pop("<unk>", None)
        vocabulary = Vocabulary(list(symbols))
    for rule in grammar.rules:
        for symbol in rule.rhs:
            if isinstance(symbol, Terminal) and symbol.text not in vocabulary:
                raise GrammarError(f"terminal {symbol.text!r} is not in the vocabulary", grammar.path, rule.line)
    n_user = len(grammar.nonterminals)
    nonterminal_id = {name: i for i, name in enumerate(grammar.nonterminals)}
    substrings = None
    if grammar.has_span_rules:
        if sentences is None:
            raise ValueError("a grammar with <any> rules needs the training sentences (their substrings "
                             "are the rules' terminals)")
        limits = [rule.rhs[0].max_length or max_substring for rule in grammar.rules if rule.kind == SPAN]
        longest = None if None in limits else max(limits)
        encoded = [_encode_with(vocabulary, s) for s in sentences]
        substrings = SubstringIndex(encoded, longest)

    symbols = list(grammar.nonterminals)
    terminal_symbol: dict[int, int] = {}
    binary, unary, lexical, spans = [], [], [], []
    rule_parent, rule_kind, rule_source = [], [], []

    def symbol_of(item) -> int:
        if isinstance(item, str):
            return nonterminal_id[item]
        word = vocabulary.index(item.text)
        if word not in terminal_symbol:
            terminal_symbol[word] = len(symbols)
            lexical.append((word, len(symbols), -1))
            symbols.append(f'{INTERNAL_PREFIX}{_format_symbol(item)}')
        return terminal_symbol[word]

    for source, rule in enumerate(grammar.rules):
        parent = nonterminal_id[rule.lhs]
        global_id = len(rule_parent)
        kind = rule.kind
        if kind == SPAN:
            count = substrings.count(rule.rhs[0].max_length or max_substring)
            spans.append((parent, global_id, count))
            rule_parent.extend([parent] * count)
            rule_kind.extend([SPAN] * count)
            rule_source.extend([source] * count)
            continue
        rule_parent.append(parent)
        rule_kind.append(kind)
        rule_source.append(source)
        if kind == LEXICAL:
            lexical.append((vocabulary.index(rule.rhs[0].text), parent, global_id))
        elif kind == UNARY:
            unary.append((parent, nonterminal_id[rule.rhs[0]], global_id))
        else:
            items = [symbol_of(item) for item in rule.rhs]
            left, carry, weight_rule = parent, None, global_id
            for position in range(len(items) - 2):
                carry = len(symbols)
                symbols.append(f"{INTERNAL_PREFIX}{source}:{position + 1}")
                binary.append((left, items[position], carry, weight_rule))
                left, weight_rule = carry, -1
            binary.append((left, items[-2], items[-1], weight_rule))
    n_symbols = len(symbols)
    dense = _choose_dense(layout, n_symbols, len(binary))
    start = nonterminal_id[grammar.start]
    kernel = _kernel(n_symbols, start, dense, binary, unary, lexical, len(vocabulary), spans)
    rule_parent = np.asarray(rule_parent, dtype=np.int32)
    row_offsets = np.zeros(n_user + 1, dtype=np.int64)
    np.cumsum(np.bincount(rule_parent, minlength=n_user), out=row_offsets[1:])
    return CompiledGrammar(tuple(grammar.nonterminals), tuple(symbols), start, vocabulary, substrings,
                           rule_parent, np.asarray(rule_kind, dtype=np.int8), row_offsets,
                           np.asarray(rule_source, dtype=np.int64), kernel, grammar)


def _encode_with(vocabulary: Vocabulary, sentence) -> np.ndarray:
    array = np.asarray(sentence)
    if array.dtype.kind in "iu":
        return array
    return vocabulary.encode(list(sentence))


def full_cnf_grammar(n_nonterminals: int, vocabulary: Vocabulary | int, start: int = 0,
                     layout: str = "dense") -> CompiledGrammar:
    """The grammar-induction grammar: every A -> B C and every A -> w (thesis §4.2).

    Built as arrays, without a `Grammar`.  Nonterminals are named ``"0"`` ..
    ``"N-1"``.  Nonterminal A's row (global ids ``row_offsets[A]`` on) is
    ``A -> B C`` at offset ``B * N + C``, then ``A -> w`` at offset
    ``N * N + w``, so |R_A| = N^2 + W.

    Parameters
    ----------
    n_nonterminals : int
        N.
    vocabulary : Vocabulary or int
        The terminals (or their number W, named ``"w0"`` ...).
    start : int
    layout : {'dense', 'sparse', 'auto'}
    """
    n = int(n_nonterminals)
    if n < 1:
        raise ValueError("n_nonterminals must be at least 1")
    if not 0 <= start < n:
        raise ValueError(f"start must be in 0..{n - 1}")
    if isinstance(vocabulary, int | np.integer):
        vocabulary = Vocabulary([f"w{i}" for i in range(int(vocabulary))], unknown=False)
    n_words = len(vocabulary)
    row = n * n + n_words
    parent, left, right = np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing="ij")
    binary_rule = parent * row + left * n + right
    binary = np.stack([parent.ravel(), left.ravel(), right.ravel(), binary_rule.ravel()], axis=1)
    words, parents = np.meshgrid(np.arange(n_words), np.arange(n), indexing="ij")
    lexical = np.stack([words.ravel(), parents.ravel(), (parents * row + n * n + words).ravel()], axis=1)
    dense = _choose_dense(layout, n, n ** 3)
    kernel = _kernel(n, start, dense, binary, np.zeros((0, 3)), lexical, n_words, np.zeros((0, 3)))
    rule_parent = np.repeat(np.arange(n, dtype=np.int32), row)
    rule_kind = np.tile(np.r_[np.full(n * n, BINARY, np.int8), np.full(n_words, LEXICAL, np.int8)], n)
    names = tuple(str(i) for i in range(n))
    return CompiledGrammar(names, names, int(start), vocabulary, None, rule_parent, rule_kind,
                           np.arange(n + 1, dtype=np.int64) * row, np.full(n * row, -1, np.int64), kernel)
