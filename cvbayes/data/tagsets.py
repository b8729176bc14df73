"""Brown corpus tags: the base tag set and a mapping to the universal tag set.

The Brown corpus decorates its 87 base tags with suffixes and prefixes
(``nn-tl`` is a noun in a title, ``fw-in`` a foreign preposition) and joins
the tags of contractions with ``+`` (``ppss+md`` for "I'll"). The raw file
holds 472 distinct tag strings; `brown_base_tag` reduces them to 104 base
tags (the 87 word tags, their negated forms such as ``md*``, and the
punctuation tags), and `UNIVERSAL_FROM_BROWN` maps each base tag to one of
the 12 universal tags of Petrov, Das and McDonald (2012).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

__all__ = [
    "TAGSETS",
    "UNIVERSAL_FROM_BROWN",
    "UNIVERSAL_TAGS",
    "brown_base_tag",
    "brown_tag",
    "map_tags",
    "universal_tag",
]

UNIVERSAL_TAGS = (
    "NOUN", "VERB", "ADJ", "ADV", "PRON", "DET", "ADP", "NUM", "CONJ", "PRT", ".", "X",
)  # fmt: skip

_DECORATIONS = ("-tl", "-hl", "-nc")


def _group(universal: str, tags: str) -> dict[str, str]:
    return dict.fromkeys(tags.split(), universal)


# Choices that are not obvious from the tag names:
# * pre-qualifiers (abl: quite, rather), qualifiers (ql: very; qlp: enough;
#   wql: how) and the negator ``*`` (not, n't) are adverbs;
# * pre-quantifiers (abn: all, half; abx: both), determiners, the
#   existential "there" (ex) and wh-determiners are DET;
# * post-determiners (ap: many, next, other) and ordinals (od) are ADJ,
#   as the Penn Treebank tags them JJ;
# * subordinating conjunctions (cs) are ADP, as the Penn Treebank tags them
#   IN; only coordinating conjunctions (cc) are CONJ;
# * nominal pronouns (pn: anyone, nothing) are PRON; adverbial nouns
#   (nr: home, today) are NOUN; nominal adverbs (rn: here, then) are ADV;
# * the infinitive marker ``to`` and adverbial particles (rp) are PRT;
# * interjections (uh) and untagged tokens (nil) are X;
# * negated verb forms (``md*``, ``bez*``, ...) keep the verb's tag.
UNIVERSAL_FROM_BROWN: dict[str, str] = {
    **_group("NOUN", "nn nn$ nns nns$ np np$ nps nps$ nr nr$ nrs"),
    **_group(
        "VERB",
        "vb vbd vbg vbn vbz md md* be bed bed* bedz bedz* beg bem bem* ben ber ber* "
        "bez bez* do do* dod dod* doz doz* hv hv* hvd hvd* hvg hvn hvz hvz*",
    ),
    **_group("ADJ", "jj jj$ jjr jjs jjt ap ap$ od"),
    **_group("ADV", "rb rb$ rbr rbt rn wrb ql qlp wql abl *"),
    **_group("PRON", "pn pn$ pp$ pp$$ ppl ppls ppo pps ppss wp$ wpo wps"),
    **_group("DET", "at dt dt$ dti dts dtx abn abx ex wdt"),
    **_group("ADP", "in cs"),
    **_group("NUM", "cd cd$"),
    **_group("CONJ", "cc"),
    **_group("PRT", "to rp"),
    **_group(".", ". , : ( ) -- `` '' '"),
    **_group("X", "uh nil"),
}


def brown_base_tag(raw: str) -> str:
    """Reduce a raw Brown tag to its base tag.

    The rules, applied in this order:

    1. lower-case the tag;
    2. drop a leading ``fw-`` (foreign word): the word keeps the tag of its
       role in the English sentence;
    3. for a ``+`` compound, the tag of a contraction such as ``ppss+md``
       ("I'll") or ``pps+bez`` ("it's"), keep the first component: the first
       word of the contraction is the one that continues the token's left
       context, and giving each compound its own tag would add about 80
       rare tags;
    4. drop the ``-tl`` (title), ``-hl`` (headline) and ``-nc`` (cited
       word) suffixes, however many there are.

    The negation mark ``*`` stays part of the tag (``md*`` is "can't", a
    different tag from ``md``), and so does the possessive ``$``; the raw
    tag ``*`` itself (the word "not") is a base tag.

    Parameters
    ----------
    raw : str
        A tag as written in the corpus.

    Returns
    -------
    str
        The base tag. It is not checked against the known tags; see
        `brown_tag`.

    Examples
    --------
    >>> [brown_base_tag(t) for t in ["nn-tl", "fw-in-tl", "ppss+md", "NP$", "md*", "---hl"]]
    ['nn', 'in', 'ppss', 'np$', 'md*', '--']
    """
    tag = raw.lower().removeprefix("fw-").split("+", 1)[0]
    while tag.endswith(_DECORATIONS):
        tag = tag[:-3]
    return tag


def brown_tag(raw: str) -> str:
    """Return the base tag of a raw Brown tag, checking that it is known.

    Raises
    ------
    ValueError
        If the base tag is not one of the 104 in `UNIVERSAL_FROM_BROWN`.
    """
    base = brown_base_tag(raw)
    if base not in UNIVERSAL_FROM_BROWN:
        raise ValueError(f"unknown Brown tag {raw!r} (base tag {base!r})")
    return base


def universal_tag(raw: str) -> str:
    """Map a raw Brown tag to its universal tag (Petrov et al. 2012).

    Raises
    ------
    ValueError
        If the tag's base tag is unknown.

    Examples
    --------
    >>> universal_tag("nns-tl"), universal_tag("ppss+md"), universal_tag("*")
    ('NOUN', 'PRON', 'ADV')
    """
    return UNIVERSAL_FROM_BROWN[brown_tag(raw)]


TAGSETS: dict[str, Callable[[str], str]] = {"brown": brown_tag, "universal": universal_tag}


def map_tags(tags: Iterable[str], tagset: str) -> list[str]:
    """Map raw Brown tags to a tag set.

    Parameters
    ----------
    tags : iterable of str
        Raw tags; each distinct one is mapped once.
    tagset : {"brown", "universal"}
        The 104 base Brown tags, or the 12 universal tags.

    Returns
    -------
    list of str

    Raises
    ------
    ValueError
        For an unknown tag set name or an unknown tag.
    """
    if tagset not in TAGSETS:
        raise ValueError(f"unknown tag set {tagset!r}; choose one of {', '.join(TAGSETS)}")
    mapping = TAGSETS[tagset]
    cache: dict[str, str] = {}
    mapped = []
    for raw in tags:
        tag = cache.get(raw)
        if tag is None:
            tag = cache[raw] = mapping(raw)
        mapped.append(tag)
    return mapped
