"""Universal Dependencies trees with function words as heads: the UD-to-SUD conversion.

UD makes content words heads: a noun heads its adposition (``case``), a verb its auxiliaries
(``aux``), its copula (``cop``) and its subordinator (``mark``).  The DMV, like the head rules
that turned the WSJ trees into dependencies, learns function-word heads, so scoring it against
UD's content heads measures the convention as much as the learner (issue 33).  Surface-Syntactic
UD (SUD; Gerdes, Guillaume, Kahane and Perrier 2018, "SUD or Surface-Syntactic Universal
Dependencies: An annotation scheme near-isomorphic to UD", UDW 2018; the conversion is
documented at surfacesyntacticud.github.io, "Conversion from UD to SUD", and written as Grew
graph-rewriting rules, ``UD_to_SUD.grs`` of the SUD tools) is the published function-head version
of UD.  No maintained converter installs from the package registries (``grewpy`` needs the
OCaml ``grewpy_backend``, which none of them ships; ``udapi`` has no SUD block), so this module
implements the universal rules itself, in their order:

1. **Relations** (packages ``sub_relations``, ``rel_extensions``, ``relations``): ``nsubj`` and
   ``csubj`` become ``subj``; ``obj`` ``comp:obj``; ``iobj`` and ``obl:arg`` ``comp:obl``;
   ``advmod``, ``amod``, ``advcl``, ``nummod`` and unmarked ``acl``/``nmod`` ``mod``; marked
   ``acl``/``nmod`` and ``obl`` ``udep``; ``acl:relcl`` ``mod@relcl``; ``expl:subj`` ``subj@expl``;
   ``xcomp``/``ccomp`` ``comp:obj``, ``comp:obl`` or ``comp:pred``; ``dep`` and ``fixed`` ``unk``;
   a remaining UD subtype becomes SUD's deep extension (``nmod:poss`` -> ``mod@poss``).
2. **Reversal** (``reverse_relations``): every ``case``, ``mark``, ``aux`` and ``cop`` edge H -> F
   turns round: F takes H's place under H's head and H hangs from F.  When a head has several,
   the one right of it and closest goes first, then the closest on the left (the levels rule,
   all at the universal level 10), and the head's other function words move to the new head
   first, so chains come out: *will have gone* is will -> have -> gone, *as in Paris* as -> in
   -> Paris, *weil er gegangen ist* weil -> ist -> gegangen.  The reversed edge is named
   ``comp:obj`` (case, mark), ``comp:pred`` (cop) or ``comp:aux`` (aux).
3. **Raising** (``shift_out_edges``, applied until nothing changes): a dependent N of the
   content word D moves up to the function word H above it when the rules say so:
   subjects, ``dislocated``, ``vocative`` and (except under a preposition) ``parataxis`` under
   aux, cop and case; subjects outside a clause's subordinator; ``discourse`` and ``orphan``
   always; ``cc`` left of H; modifiers and punctuation on H's side of D or beyond (N < H < D,
   N < D < H, D < H < N) and, with the rules' restrictions, after D (H < D < N: modifiers that
   are prepositional or subordinate phrases, a copula's adverbs; punctuation unless it closes
   a pair opened left of D or the move would cross an arc), adverbs between an auxiliary or
   copula and its verb; ``conj`` whose conjunct is another kind of phrase (a PP coordinated
   with a PP: in -> Paris and in -> London gives in -> in).
4. **Coordination** (``minimize_right_conj-dep``, ``chained_relations``): a first conjunct's
   dependents after its last conjunct move to that conjunct (*buy and sell books*: sell ->
   books); conjuncts, ``flat`` and ``fixed`` groups become chains (A -> B -> C).
5. **Names**: the relations outside SUD's set become ``unk``.

Left out, as they concern annotations these treebanks do not use or only feature columns: the
idiom and title machinery (``ExtPos``, ``InTitle``), the ``Shared`` feature, the indirect forms of
the conjunct-dependent move, the rules keyed to ``deep=agent`` for causatives, and the
language-specific levels (English, Hebrew and Czech have none).  The clausal complements' comp
subtypes follow the rules' main cases; HEAD, which is what evaluation reads, never depends on them.

One addition of ours: SUD leaves some trees non-projective that were projective in UD (a
fronted object over its auxiliary: *What did you see*, what <- see crosses did).  A DMV can
only build projective trees, and issue 33 asks for conversions that keep projectivity, so a
tree that was projective is made projective again by lifting (Nivre and Nilsson 2005, "Pseudo-
projective dependency parsing", ACL: the shortest non-projective arc h -> d becomes head(h) ->
d, repeated).  `FunctionHeadStats` counts how many arcs that moved: 946 of EWT's 254,819 words
(0.4 %), 1,000 of HTB's 160,379 (0.6 %), 73 of Czech PUD's 18,609 (0.4 %).

Every operation moves a subtree under an ancestor or a sibling, so a tree stays a tree with its
single root.  Only HEAD and DEPREL change (`convert_document`); every other byte of a file stays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .conllu_io import ConlluDocument
from .errors import CorpusFormatError

__all__ = ["CONVENTIONS", "FunctionHeadStats", "convert_document", "function_heads", "is_projective"]

CONVENTIONS = ("content", "function")
FUNCTION_RELATIONS = frozenset({"case", "mark", "aux", "cop"})
# relations SUD keeps; any other becomes unk (package unk_rel)
SUD_RELATIONS = frozenset({
    "appos", "cc", "clf", "comp", "compound", "conj", "det", "discourse", "dislocated", "flat", "goeswith",
    "list", "mod", "orphan", "parataxis", "punct", "reparandum", "root", "subj", "udep", "unk", "vocative"})
NOMINAL = frozenset({"NOUN", "PRON", "PROPN", "NUM", "X"})
VERBAL = frozenset({"AUX", "VERB"})
# closing punctuation that is not raised when its opening twin is left of the content word
PAIRS = {")": "(", "]": "[", "»": "«", "}": "{"}


@dataclass
class FunctionHeadStats:
    """What a conversion did: sentences and words seen, words whose head changed, arcs lifted
    to restore projectivity, and trees projective before and after."""

    sentences: int = 0
    words: int = 0
    changed: int = 0
    lifted: int = 0
    projective_before: int = 0
    projective_after: int = 0

    def add(self, other: FunctionHeadStats) -> None:
        for name in ("sentences", "words", "changed", "lifted", "projective_before", "projective_after"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


class _Tree:
    """One sentence during the conversion; index 0 is the artificial root, words are 1..n.

    ``rel``, ``sub`` and ``deep`` name the edge into each word (SUD's ``rel:sub@deep``); ``rev``
    marks an edge that was reversed (its head is a function word over its content word)."""

    def __init__(self, heads, deprels, upos, feats, lemmas):
        n = len(heads)
        self.n = n
        self.head = [0] + [int(h) for h in heads]
        self.rel, self.sub, self.deep = [None], [None], [None]
        for deprel in deprels:
            base, _, sub = deprel.partition(":")
            self.rel.append(base)
            self.sub.append(sub or None)
            self.deep.append(None)
        self.upos = [None] + list(upos)
        self.verbform = [None] + [_feature(f, "VerbForm") for f in feats]
        self.lemma = [None] + list(lemmas)
        self.rev = [False] * (n + 1)
        # the UD relations (and without subtypes), which some rules test
        self.ud = [None] + list(deprels)
        self.ud_base = [None] + [d.split(":")[0] for d in deprels]

    def children(self, h):
        return [i for i in range(1, self.n + 1) if self.head[i] == h]

    def has_child(self, h, rels, sub=None):
        return any(self.head[i] == h and self.rel[i] in rels and (sub is None or self.sub[i] == sub)
                   for i in range(1, self.n + 1))

    def label(self, i):
        text = self.rel[i]
        if self.sub[i]:
            text += ":" + self.sub[i]
        if self.deep[i]:
            text += "@" + self.deep[i]
        return text


def _feature(feats, name):
    if feats in (None, "_"):
        return None
    for item in feats.split("|"):
        key, _, value = item.partition("=")
        if key == name:
            return value
    return None


def _set(t, i, rel, sub=None, deep=None):
    t.rel[i], t.sub[i], t.deep[i] = rel, sub, deep


# --- 1. relations --------------------------------------------------------------------------

_SUBJECTS = ("nsubj", "csubj", "nsubj:pass", "csubj:pass")


def _ud_child(t, h, relations):
    return any(t.head[j] == h and t.ud[j] in relations for j in range(1, t.n + 1))


def _sub_relation(t, i):
    """Package sub_relations: UD subtypes with a SUD relation of their own.  True if renamed."""
    h, rel, sub = t.head[i], t.rel[i], t.sub[i]
    full = f"{rel}:{sub}" if sub else rel
    if full == "dep:comp":
        _set(t, i, "comp", "obl" if t.upos[h] in ("NOUN", "PRON") else None)
    elif full == "expl:pv":
        _set(t, i, "comp", None, "expl")
    elif full == "expl:pass":
        _set(t, i, "comp", None, "pass")
    elif full in ("xcomp:obj", "xcomp:obl"):
        _set(t, i, "comp", sub, "x")
    elif full in ("advcl:cleft", "ccomp:obj", "ccomp:obl", "ccomp:pred"):
        _set(t, i, "comp", sub)
    elif rel in ("nsubj", "csubj") and sub in (None, "pass") and _ud_child(t, h, ("expl:subj",)):
        _set(t, i, "comp", "obj", "pass" if sub == "pass" else "agent")
    elif full in ("obl:arg", "obl:comp"):
        _set(t, i, "comp", "obl")
    elif full == "obl:agent":
        _set(t, i, "comp", "obl", "agent")
    elif full == "xcomp:pred":
        verbal = t.upos[i] == "VERB" or t.has_child(i, {"cop"})
        _set(t, i, "comp", "pred", "x" if verbal else None)
    elif full == "obl:mod":
        _set(t, i, "mod")
    elif full == "acl:relcl":
        _set(t, i, "mod", None, "relcl")
    elif full == "expl:subj":
        # an nsubj or csubj beside it has just become comp:obj@agent or @pass (above)
        if any(t.ud_base[j] in ("nsubj", "csubj") and t.ud[j] not in _SUBJECTS for j in t.children(h)):
            return False
        _set(t, i, "subj", None, "expl")
    elif rel == "expl" and sub:
        _set(t, i, "unk", None, "expl")
    else:
        return False
    return True


def _relation(t, i):
    """Package relations: the main UD relations renamed (case, mark, aux, cop wait for the
    reversal)."""
    ud = t.ud_base
    h, rel = t.head[i], t.rel[i]
    verb_head = t.upos[h] == "VERB"
    marked_by_adp = any(ud[j] == "mark" and t.upos[j] == "ADP" for j in t.children(i))
    passive = t.has_child(h, {"aux"}, "pass")
    has_object = any(ud[j] == "obj" for j in t.children(h) if j != i)
    if rel == "expl":
        _set(t, i, "comp" if verb_head and t.upos[i] == "PRON" else "unk", None, "expl")
    elif rel == "obj":
        t.rel[i], t.sub[i] = "comp", "obj"
    elif rel == "ccomp":
        direct = verb_head and not marked_by_adp and not has_object and not passive
        t.rel[i], t.sub[i] = "comp", "obj" if direct else "obl"
    elif rel == "iobj":
        t.rel[i], t.sub[i] = "comp", "obl"
    elif rel == "xcomp":
        verbal = t.upos[i] == "VERB" or t.has_child(i, {"cop"})
        if not verbal:
            t.rel[i], t.sub[i] = "comp", "pred"
        elif t.verbform[i] == "Part" and t.upos[i] == "VERB":
            _set(t, i, "comp", "pred", "x")
        else:
            direct = verb_head and not any(ud[j] == "mark" for j in t.children(i)) and not has_object \
                and not passive
            _set(t, i, "comp", "obj" if direct else "obl", "x")
    elif rel in ("advcl", "advmod", "amod", "nummod"):
        t.rel[i] = "mod"
    elif rel in ("acl", "nmod"):
        t.rel[i] = "udep" if any(ud[j] in ("case", "mark") for j in t.children(i)) else "mod"
    elif rel in ("nsubj", "csubj"):
        t.rel[i] = "subj"
    elif rel == "obl":
        t.rel[i] = "udep"
    elif rel in ("dep", "fixed"):
        t.rel[i] = "unk"


def _relations(t):
    for i in range(1, t.n + 1):
        if not _sub_relation(t, i) and t.sub[i] and t.rel[i] not in ("aux", "comp", "subj"):
            # package rel_extensions: a remaining subtype becomes the deep extension
            t.deep[i], t.sub[i] = t.sub[i], None
    for i in range(1, t.n + 1):
        if t.rel[i] not in FUNCTION_RELATIONS:
            _relation(t, i)


# --- 2. reversal ---------------------------------------------------------------------------

def _next_reversal(t):
    """The next function edge (H, F) to reverse: for some H, its closest function dependent
    on the right, else its closest on the left (rule reverse_edges at a single level)."""
    for h in range(1, t.n + 1):
        functions = [f for f in t.children(h) if t.rel[f] in FUNCTION_RELATIONS and not t.rev[f]]
        if not functions:
            continue
        right = [f for f in functions if f > h]
        return h, min(right) if right else max(functions)
    return None


def _reverse(t):
    while (pair := _next_reversal(t)) is not None:
        h, f = pair
        function_edge = (t.rel[f], t.sub[f], t.deep[f])
        # F takes H's place under H's head, with H's edge (shift_in) ...
        t.head[f] = t.head[h]
        t.rel[f], t.sub[f], t.deep[f], t.rev[f] = t.rel[h], t.sub[h], t.deep[h], t.rev[h]
        # ... H hangs from F by the function relation ...
        t.head[h] = f
        (t.rel[h], t.sub[h], t.deep[h]), t.rev[h] = function_edge, True
        # ... and H's other function words without a deep extension move to F (shift_out)
        for g in t.children(h):
            if t.rel[g] in FUNCTION_RELATIONS and not t.deep[g] and not t.rev[g]:
                t.head[g] = f


# --- 3. raising ----------------------------------------------------------------------------

def _crosses_right(t, d, n):
    """D has a dependent right of N (raising N would cross its arc)."""
    return any(x > n for x in t.children(d))


def _closes_a_pair(t, d, n):
    """N closes punctuation that D opened on its left (same mark, or a bracket pair)."""
    closing = t.lemma[n]
    return any(t.rel[x] == "punct" and x < d and t.lemma[x] in (closing, PAIRS.get(closing))
               for x in t.children(d))


def _raised(t, h, d, n):
    """Whether dependent N of content word D moves to the function word H above it (the rules of
    package shift_out_edges; ``function`` is the reversed edge's relation)."""
    function, rel = t.rel[d], t.rel[n]
    if rel in ("discourse", "orphan"):
        return True
    if rel == "cc":
        return n < h
    if t.deep[n] == "agent" and (function == "cop" or (function == "aux" and t.sub[d] == "caus")):
        return True
    if function in ("cop", "aux", "case"):
        if rel in ("dislocated", "subj", "vocative") or (rel == "comp" and t.sub[n] == "cleft"):
            return True
        if rel == "parataxis":
            return not (function == "case" and t.rel[h] != "cop")
    if function == "mark" and rel in ("dislocated", "subj", "vocative") and n < h < d:
        return True
    if function == "mark" and rel in ("dislocated", "subj") and d < h < n:
        return True
    if rel == "mod" and h < d < n and function != "mark":
        if t.deep[n] == "relcl" or _crosses_right(t, d, n):
            return False
        if function == "case":
            return t.upos[n] in ("ADP", "SCONJ")
        if function == "cop":
            return t.upos[n] in ("ADP", "ADV", "SCONJ")
        return True
    if rel == "punct" and h < d < n:
        return not _crosses_right(t, d, n) and not _closes_a_pair(t, d, n)
    if rel == "mod" and function in ("aux", "cop") and h < n < d:
        if function == "cop" and t.upos[n] == "ADJ" and t.upos[d] == "NOUN":
            return False
        return not any(h < x < n for x in t.children(d))
    if rel in ("mod", "punct") and (d < h < n or n < d < h):
        return True
    if rel == "mod" and function == "cop" and d < n < h:
        return True
    if rel in ("mod", "orphan", "punct", "reparandum", "udep") and n < h < d:
        return True
    if rel == "conj":
        return _conjunct_raised(t, h, d, n)
    return False


def _conjunct_raised(t, h, d, n):
    """Rules conj and conj_verb: a conjunct of another kind of phrase than D goes up to H."""
    a, b = t.upos[d], t.upos[n]
    form_a, form_b = t.verbform[d], t.verbform[n]
    same_verb_form = a in VERBAL and b in VERBAL and form_a is not None and form_a == form_b
    if h < d and a in VERBAL and form_a is not None and not same_verb_form:
        return True
    if a == b or same_verb_form or (a in NOMINAL and b in NOMINAL) or {a, b} <= {"ADP", "ADV"}:
        return False
    if (a in ("ADJ", "ADP") and b == "VERB" and form_b == "Part") or \
            (a == "VERB" and form_a == "Part" and b in ("ADJ", "ADP")):
        return False
    return True


def _raise(t):
    changed = True
    while changed:
        changed = False
        for d in range(1, t.n + 1):
            if t.rev[d]:
                h = t.head[d]
                for n in t.children(d):
                    if _raised(t, h, d, n):
                        t.head[n] = h
                        changed = True


def _rename_reversed(t):
    """Package rename_rel: case and mark -> comp:obj, cop -> comp:pred, aux(:X) -> comp:aux(@X)."""
    for i in range(1, t.n + 1):
        if t.rel[i] in ("case", "mark"):
            t.rel[i], t.sub[i] = "comp", "obj"
        elif t.rel[i] == "cop":
            t.rel[i], t.sub[i] = "comp", "pred"
        elif t.rel[i] == "aux":
            _set(t, i, "comp", "aux", t.sub[i])


# --- 4. coordination -----------------------------------------------------------------------

def _move_right_dependents(t):
    """Rule minimize_direct: a first conjunct's dependent after a later conjunct (and before
    the next) moves to that conjunct."""
    kept = {"conj", "discourse", "parataxis", "punct"}
    changed = True
    while changed:
        changed = False
        for c1 in range(1, t.n + 1):
            conjuncts = [c for c in t.children(c1) if t.rel[c] == "conj"]
            for d in t.children(c1):
                if t.rel[d] in kept or not any(c < d for c in conjuncts):
                    continue
                t.head[d] = max(c for c in conjuncts if c < d)
                changed = True


def _mark_embedded_conjuncts(t):
    """Rule add_conj_emb: a conj edge below a conj edge is conj:emb."""
    changed = True
    while changed:
        changed = False
        for i in range(1, t.n + 1):
            h = t.head[i]
            if (h and t.label(i) == "conj" and t.rel[h] == "conj" and t.sub[h] in (None, "emb")
                    and not t.deep[h]):
                t.sub[i] = "emb"
                changed = True


def _chain(t):
    """Package chained_relations: conj, flat and fixed groups under one head become chains."""
    for h in range(0, t.n + 1):
        for group in ("conj", "flat", "fixed"):
            members = [i for i in t.children(h) if (t.ud_base[i] if group == "fixed" else t.rel[i]) == group]
            for left, right in zip(members, members[1:]):
                t.head[right] = left


# --- 6. projectivity (ours) ----------------------------------------------------------------

def _ancestors_ok(head, h, d):
    """Every word strictly between h and d descends from h."""
    for x in range(min(h, d) + 1, max(h, d)):
        y = x
        while y not in (0, h):
            y = head[y]
        if y != h:
            return False
    return True


def is_projective(heads) -> bool:
    """True if no arc of the tree ``heads`` (1-based, 0 = root) crosses another, the root's
    arcs included (a word between a head and its dependent descends from that head)."""
    head = [0] + [int(h) for h in heads]
    return all(_ancestors_ok(head, head[d], d) for d in range(1, len(head)))


def _lift(t):
    """Nivre and Nilsson's lifting: the shortest non-projective arc h -> d becomes head(h) -> d,
    until none is left.  Returns the number of lifts."""
    lifts = 0
    while True:
        bad = [d for d in range(1, t.n + 1) if not _ancestors_ok(t.head, t.head[d], d)]
        if not bad:
            return lifts
        d = min(bad, key=lambda x: (abs(t.head[x] - x), x))
        t.head[d] = t.head[t.head[d]]
        lifts += 1


# --- the conversion ------------------------------------------------------------------------

def _check_tree(heads):
    n = len(heads)
    for d, h in enumerate(heads, start=1):
        if not 0 <= h <= n or h == d:
            raise ValueError(f"word {d} has head {h}, not another word of the sentence or 0")
    for d in range(1, n + 1):
        seen, y = 0, d
        while y != 0:
            y = heads[y - 1]
            seen += 1
            if seen > n:
                raise ValueError(f"the heads have a cycle through word {d}")


def _convert(heads, deprels, upos, feats, lemmas):
    heads = [int(h) for h in heads]
    _check_tree(heads)
    t = _Tree(heads, deprels, upos, feats, lemmas)
    _relations(t)
    _reverse(t)
    _raise(t)
    _rename_reversed(t)
    _move_right_dependents(t)
    _mark_embedded_conjuncts(t)
    _chain(t)
    for i in range(1, t.n + 1):
        if t.rel[i] not in SUD_RELATIONS:
            _set(t, i, "unk")
    lifts = _lift(t) if is_projective(heads) else 0
    return t, lifts


def function_heads(heads, deprels, upos, feats=None, lemmas=None):
    """One sentence's UD tree with function words as heads (SUD; module notes).

    Parameters
    ----------
    heads : sequence of int
        UD HEAD of each word, 1-based, 0 = root; must form a tree (no cycle).
    deprels, upos : sequence of str
        UD DEPREL and UPOS of each word.
    feats : sequence of str, optional
        FEATS of each word (``VerbForm`` is read); default none.
    lemmas : sequence of str, optional
        Lemmas (or forms) of each word, to pair punctuation; default none.

    Returns
    -------
    heads : numpy.ndarray of int64, shape (n,)
    deprels : list of str
        SUD relations (``subj``, ``comp:obj``, ``comp:aux@pass``, ``mod``, ``udep``, ...).
    """
    n = len(heads)
    t, _ = _convert(heads, deprels, upos, feats or ["_"] * n, lemmas or ["_"] * n)
    return np.array(t.head[1:], dtype=np.int64), [t.label(i) for i in range(1, n + 1)]


def convert_document(document: ConlluDocument) -> FunctionHeadStats:
    """Replace HEAD and DEPREL of every sentence of ``document`` with its function-head tree,
    in place; every other byte stays.  Returns what the conversion did.

    Raises
    ------
    CorpusFormatError
        Naming the file and line of a sentence whose HEAD column is not a tree; nothing is
        changed then.
    """
    stats = FunctionHeadStats()
    new_heads, new_relations = [], []
    for sentence in document:
        if not sentence.n_words:
            continue
        old = sentence.heads()
        forms, lemmas = sentence.column("form"), sentence.column("lemma")
        try:
            t, lifts = _convert(old, sentence.column("deprel"), sentence.column("upos"),
                                sentence.column("feats"),
                                [lemma if lemma != "_" else form for lemma, form in zip(lemmas, forms)])
        except ValueError as error:
            raise CorpusFormatError(f"not a tree: {error}", sentence.path, sentence.first_line) from None
        heads = t.head[1:]
        stats.add(FunctionHeadStats(1, t.n, int(np.sum(np.asarray(heads) != old)), lifts,
                                    int(is_projective(old)), int(is_projective(heads))))
        new_heads.extend(heads)
        new_relations.extend(t.label(i) for i in range(1, t.n + 1))
    document.replace_column("head", new_heads)
    document.replace_column("deprel", new_relations)
    return stats
