"""Part-of-speech induction with HMMs: corpora, tag dictionaries, fitting and scoring (thesis §3.8.1-3.8.2).

This is the pipeline behind ``cvbayes compare``, ``fit``, ``tag``, ``evaluate``
and the tagging experiments.  Semi-supervised means the formulation of
Merialdo (1994): one state per gold tag and a tag dictionary saying which tags
each word type may take; the score is accuracy.  Unsupervised means no
dictionary, K = number of gold tags, and the four clustering metrics.
"""
from __future__ import annotations

import time

import numpy as np

from .data import (Corpus, CorpusFormatError, Vocabulary, complete_tag_dictionary, incomplete_tag_dictionary, load_brown,
                   load_embedded_brown, read_conllu, read_tagged, read_text)
from .data.conllu_io import read_conllu_document
from .files import write_text
from .metrics import accuracy, tagging_report
from .models.hmm import HMM

FORMATS = ("auto", "tagged", "conllu", "text")
# the MISC item `cvbayes tag --column misc` writes
PREDICTED_TAG = "PredTag"
BROWN_NAMES = ("brown", "brown-embedded")


def load_corpus(source, fmt="auto", tagset="brown", n_sentences=None, vocabulary=None, gold=True, tag="upos"):
    """Read a corpus named on the command line.

    Parameters
    ----------
    source : str
        ``brown`` (the full corpus fetched by ``cvbayes data fetch brown``),
        ``brown-embedded`` (the 2,000-sentence slice shipped with cvbayes), or
        a file path.
    fmt : {"auto", "tagged", "conllu", "text"}
        File format; ``auto`` guesses it (`guess_format`).  A file that does not
        read as the format raises `CorpusFormatError` naming the ``--format`` to try.
    tagset : {"brown", "universal"}
        Tag set for the Brown corpus (ignored for files).
    n_sentences : int, optional
        Keep only the first sentences.
    vocabulary : Vocabulary, optional
        Encode words with this vocabulary (a fitted model's); unseen words get
        its unknown id.
    gold : bool
        Read CoNLL-U's tag column; False for files to be tagged, whose tags may be ``_``.
    tag : {"upos", "xpos"}
        The CoNLL-U column that holds the gold tags.
    """
    if source in BROWN_NAMES:
        loader = load_embedded_brown if source == "brown-embedded" else load_brown
        corpus = loader(tagset=tagset)
        if vocabulary is not None:
            corpus = corpus.recoded(vocabulary)
    else:
        if fmt not in FORMATS:
            raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
        guessed = fmt == "auto"
        if guessed:
            fmt = guess_format(source)
        reader = {"conllu": read_conllu, "tagged": read_tagged, "text": read_text}[fmt]
        options = {} if fmt != "conllu" else {"tag": tag if gold else None}
        try:
            corpus = reader(source, vocabulary=vocabulary, **options)
        except CorpusFormatError as error:
            raise _with_format_hint(error, fmt, guessed) from None
    if n_sentences is not None:
        corpus = corpus[:n_sentences]
    return corpus


def guess_format(path, n_lines=200):
    """The format of a corpus file: ``conllu`` by its ``.conllu`` name or its first line (a comment
    or ten tab-separated fields), ``tagged`` when more than half the tokens of its first ``n_lines``
    non-blank lines are ``word/TAG``, else ``text``."""
    if str(path).endswith(".conllu"):
        return "conllu"
    lines = []
    with open(path, encoding="utf-8", errors="replace") as file:
        for line in file:
            if line.strip():
                lines.append(line.strip("\r\n\ufeff"))
            if len(lines) == n_lines:
                break
    if lines and (lines[0].startswith("#") or lines[0].count("\t") == 9):
        return "conllu"
    tokens = [token.rpartition("/") for line in lines for token in line.split()]
    # more than half, so that one malformed token is reported by the word/TAG reader with its line
    if 2 * sum(bool(word and slash and tag) for word, slash, tag in tokens) > len(tokens):
        return "tagged"
    return "text"


def _with_format_hint(error, fmt, guessed):
    """``error`` with the ``--format`` that reads what the file looks like instead."""
    if fmt == "tagged":
        hint = "is it plain text? then use --format text"
    elif fmt == "conllu":
        hint = "is it not CoNLL-U? then use --format tagged (word/TAG lines) or --format text"
    else:
        return error
    how = f"read as {fmt}" + (" (guessed from its first lines)" if guessed else "")
    return CorpusFormatError(f"{error.message} ({how}; {hint})", error.path, error.line)


def compact(corpus, dictionary=None):
    """Keep only the word types a (sub)corpus uses, renumbered densely.

    A 1K-sentence slice of Brown uses 5k of its 56k word types; the emission
    table of every algorithm is W x K, so dropping the unused rows makes small
    corpora as cheap as their size.  Returns the compacted corpus and the
    matching rows of ``dictionary`` (or None).
    """
    used = np.unique(corpus.observations)
    renumber = np.zeros(len(corpus.vocabulary), dtype=np.int32)
    renumber[used] = np.arange(used.size, dtype=np.int32)
    words = corpus.vocabulary.decode(used)
    vocabulary = Vocabulary(words, unknown=False)
    compacted = Corpus(renumber[corpus.observations], corpus.offsets, vocabulary=vocabulary,
                       gold=corpus.gold, tagset=corpus.tagset, source=corpus.source)
    return compacted, None if dictionary is None else np.ascontiguousarray(dictionary[used])


def tag_dictionary(corpus, kind, d=1, reference=None):
    """Tag dictionary of §3.8.1: ``complete`` (every tag seen with the word in
    ``reference``, default the corpus itself), ``incomplete`` (Smith and Eisner:
    words seen fewer than d times in the corpus may take any tag) or ``none``."""
    if kind == "none":
        return None
    if kind == "complete":
        return complete_tag_dictionary(corpus, reference)
    if kind == "incomplete":
        return incomplete_tag_dictionary(corpus, d, reference)
    raise ValueError(f"unknown tag dictionary {kind!r}; choose none, complete or incomplete")


def random_baseline(corpus, dictionary):
    """Expected accuracy of choosing uniformly among the tags the dictionary allows
    (the "Random" column of thesis Fig. 3.10)."""
    allowed = dictionary[corpus.observations]
    return float(np.mean(allowed[np.arange(corpus.n_tokens), corpus.gold] / allowed.sum(axis=1)))


def score_states(states, corpus, supervised):
    """Accuracy when states are tags (semi-supervised), else the four
    clustering metrics of §3.8.2 plus plain many-to-one."""
    if supervised:
        return {"accuracy": accuracy(states, corpus.gold)}
    return tagging_report(states, corpus.gold)


def fit_tagger(corpus, algorithm, alpha, beta, n_iter, seed, dictionary=None, n_states=None,
               checkpoints=(), progress=False, model=None, **fit_options):
    """Fit one HMM tagger and score it on its own training corpus (transductive, as §3.8).

    ``fit_options`` are the model's parameters (batch_size, kappa, subchain_length, n_init, ...) and
    the runtime arguments of its ``fit`` (checkpoint, client, ...).
    ``model`` is an unfitted model to train in place of ``HMM(n_states, alpha,
    beta)`` (an `HDPHMM`, say).

    ``checkpoints`` lists iterations (1-based) at which the current model is
    decoded and scored, for the accuracy-against-iterations and -time curves
    of Fig. 3.11; the time axis counts training only.

    Returns the model, the decoded states (maximum posterior decoding) and a
    result dict: scores (none for an untagged corpus), training seconds, and the curve.
    """
    supervised = dictionary is not None
    if n_states is None:
        n_states = len(corpus.tagset)
    if model is None:
        model = HMM(n_states, alpha=alpha, beta=beta, tag_dictionary=dictionary)
    wanted = set(checkpoints)
    curve = []

    def scores(states):
        # an untagged corpus (plain text) has nothing to score against
        return {} if corpus.gold is None else score_states(states, corpus, supervised)

    def record(fitted, iteration):
        if iteration + 1 in wanted:
            seconds = sum(r.seconds for r in fitted.history_)
            curve.append({"iteration": iteration + 1, "seconds": seconds,
                          **scores(fitted.decode(corpus))})

    started = time.perf_counter()
    params = model.get_params()
    model.set_params(algorithm=algorithm, n_iter=n_iter, random_state=seed,
                     **{name: value for name, value in fit_options.items() if name in params})
    model.fit(corpus, progress=progress, callback=record if wanted else None,
              **{name: value for name, value in fit_options.items() if name not in params})
    states = model.decode(corpus)
    result = {"algorithm": algorithm, "seed": seed, "alpha": model.alpha, "beta": model.beta, "iterations": n_iter,
              "train_seconds": sum(r.seconds for r in model.history_),
              "wall_seconds": time.perf_counter() - started,
              **scores(states), "curve": curve}
    return model, states, result


def write_tagged(path_or_file, corpus, tags, fmt, column="upos"):
    """Write a corpus's own words with predicted tags, as ``word/TAG`` lines or as new CoNLL-U with the
    tag in ``column`` (``upos``, ``xpos``, or ``misc`` as ``PredTag=TAG``).  To tag an existing CoNLL-U
    file, replace its column with `cvbayes.data.conllu_io` instead, which keeps every other byte."""
    words = corpus.vocabulary.decode(corpus.observations) if corpus.vocabulary else corpus.observations
    lines = []
    for i in range(corpus.n_sequences):
        begin, end = corpus.offsets[i], corpus.offsets[i + 1]
        if fmt == "conllu":
            lines.append(f"# sent_id = {i + 1}")
            for t in range(begin, end):
                fields = [str(t - begin + 1), words[t]] + ["_"] * 8
                if column == "misc":
                    fields[9] = f"{PREDICTED_TAG}={tags[t]}"
                else:
                    fields[{"upos": 3, "xpos": 4}[column]] = str(tags[t])
                lines.append("\t".join(fields))
            lines.append("")
        else:
            lines.append(" ".join(f"{words[t]}/{tags[t]}" for t in range(begin, end)))
    text = "\n".join(lines) + "\n"
    if hasattr(path_or_file, "write"):
        path_or_file.write(text)
    else:
        write_text(path_or_file, text)


def tag_conllu_document(path, tags, column):
    """The text of CoNLL-U file ``path`` with ``tags`` (one per ordinary word) in ``column`` and every
    other byte as it was: comments, multiword ranges, empty nodes, other columns (`cvbayes.data.conllu_io`)."""
    document = read_conllu_document(path)
    if column == "misc":
        document.set_misc(PREDICTED_TAG, tags)
    else:
        document.replace_column(column, tags)
    return document.to_text()


def map_to_gold(model, states, gold_corpus):
    """Tags for ``states``: each state's most frequent gold tag on ``gold_corpus`` decoded by ``model``
    (the many-to-one mapping of thesis §3.8.2); a state never used there gets the most frequent tag."""
    if gold_corpus.gold is None:
        raise ValueError(f"{gold_corpus.source}: has no gold tags to learn the many-to-one mapping from")
    table = np.zeros((model.n_states, len(gold_corpus.tagset)))
    np.add.at(table, (model.decode(gold_corpus), gold_corpus.gold), 1)
    mapping = np.where(table.sum(axis=1) > 0, table.argmax(axis=1), table.sum(axis=0).argmax())
    return gold_corpus.tagset.decode(mapping[states])
