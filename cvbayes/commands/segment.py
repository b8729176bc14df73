"""``cvbayes segment``: unsupervised word segmentation with a Pitman-Yor adaptor grammar.

Files
-----
* **Input**: one utterance a line, its symbols (phonemes, syllables) separated by white space; with
  ``--chars`` every character is a symbol (a user-perceived character: an extended grapheme cluster, so
  ``ɑ̃`` or ``é`` written with a combining mark is one symbol) and white space is removed first (the usual
  unsegmented text).  An empty line is an error (every line is an utterance).
* **Output**: one line an input line, each word's symbols joined by ``--phone-separator`` and the words
  separated by ``--word-separator``, the options and defaults of wordseg (Bernard et al. 2020): by default
  symbols joined with nothing between them and words separated by a space (``y u w a n t`` -> ``yu want``,
  wordseg's segmented text).  A word separator that is not white space is a marker closing every word,
  set off by spaces: ``--phone-separator ' ' --word-separator ';eword'`` writes wordseg's tagged format
  (Brent's ``br-phonemes.txt``: ``y u ;eword w a n t ;eword``).  When the input has a symbol of several
  characters (``sh ii a1``) and no separator is given, that tagged format is used, so that the symbols can be
  read back apart; ``--word-separator $'\\t'`` with ``--phone-separator ' '`` writes words separated by tabs.
* **Gold** (``--gold``): one line for each input line, in one of those formats (the file's first
  ``;eword`` or tab tells which): ``;eword`` markers (Brent's file is its own gold), words separated by tabs
  with their symbols by spaces, or words separated by spaces with their symbols joined; in the last, a word's
  characters are matched against the input's symbols, so multi-character symbols work as long as no gold
  boundary falls inside one.

Bad input stops the command before anything is written, with one line naming the file and line: an empty
line, a symbol the grammar cannot derive, a gold line that does not spell its input line (or a gold file
with more or fewer lines), an utterance longer than ``--max-length`` symbols (default 200), or an input
whose substrings (the sum over utterances of T (T + 1) / 2 for T symbols) exceed ``--max-substrings``
(default 4 million).  Those two caps bound memory: the charts of an utterance grow with the square of its
length and its time with the cube, and the model keeps every substring of every utterance as a candidate
word (about 0.75 KB each, measured with vb on the unigram grammar: 200 utterances of 200 letters, 4 million
substrings, took 3.1 GB).  An error, not a skipped line: the output keeps one line for each input line,
and a line left out or left whole would silently change the scores.

A segmentation that is degenerate (boundaries at fewer than 2 % of the places between two symbols:
utterances left whole; or at more than 90 %: nearly every symbol a word) gets a warning on standard error
that says what to try, even with ``--quiet``, and in the JSON report.
"""
import argparse
import json
import sys
import time

from ..data.errors import CorpusFormatError, read_text_file
from ..data.segmentation import _WORD_END, _brent_phonemes
from ..files import write_text
from ..metrics.segmentation import segmentation_report, segmentation_scores
from .options import add_cluster_arguments, cluster_requested, connect

ALGORITHMS = ("vb", "cvi", "mcmc")
SHARDED_ALGORITHMS = ("vb",)     # what --workers and --scheduler run (cvbayes.models.adaptor.sharded)
# the default learner: mcmc from py-cfg's start as wordseg ships it (a = 1e-4, b = 1e4, both sampled, the
# table-label move; wordseg.algos.ag.DEFAULT_ARGS), the best token F1 a second across the corpora of
# docs/results/wordseg/segment_defaults.md; what mcmc was not given explicitly
DEFAULT_ALGORITHM = "mcmc"
SAMPLER_DEFAULTS = {"discount": 1e-4, "concentration": 1e4, "estimate_hyperparameters": True, "resample_tables": True,
                    "iterations": 200}
MAX_LENGTH = 200
MAX_SUBSTRINGS = 4_000_000
TAGGED = (" ", _WORD_END)      # wordseg's tagged format: symbols separated by spaces, ';eword' closing words
# a segmentation with boundaries at fewer (more) than this share of the places between two symbols
FEW_BOUNDARIES, MANY_BOUNDARIES = 0.02, 0.9

EPILOG = """\
examples:
  # Brent's corpus: its br-phonemes.txt (";eword" closes each word) is the gold; the input drops the markers
  sed 's/ ;eword//g' br-phonemes.txt > brent.txt
  cvbayes segment brent.txt --grammar unigram --gold br-phonemes.txt -o brent.seg
  # plain text, one character a symbol, scored against a hand-segmented copy
  cvbayes segment --chars unsegmented.txt --gold segmented.txt --json
"""


def _lines(path):
    """The lines of a text file (or standard input for ``-``), without a final empty line."""
    text = sys.stdin.read() if path == "-" else read_text_file(path)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def read_utterances(path, chars=False):
    """The utterances of an input file: for each line its symbols (a list of str).

    With `chars` the symbols are the line's extended grapheme clusters (``regex``'s ``\\X``), white space
    removed first; otherwise the line's white-space separated tokens.

    Raises
    ------
    CorpusFormatError
        Undecodable bytes, an empty line, Brent's ``;eword`` markers (with the line), or no line at all.
    """
    import regex

    utterances = []
    for number, line in enumerate(_lines(path), start=1):
        if chars:
            symbols = regex.findall(r"\X", "".join(line.split()))
        else:
            symbols = line.split()
            if _WORD_END in symbols:
                raise CorpusFormatError(f"the line holds Brent's '{_WORD_END}' word markers, i.e. it is already "
                                        f"segmented; remove them for the input (sed 's/ {_WORD_END}//g') and "
                                        "give the marked file as --gold", path, number)
        if not symbols:
            raise CorpusFormatError("an empty line: every line is an utterance of at least one symbol (remove "
                                    "empty lines, e.g. grep -v '^[[:space:]]*$')", path, number)
        utterances.append(symbols)
    if not utterances:
        raise CorpusFormatError("no utterances (the input is empty)", path)
    return utterances


def check_size(utterances, path, max_length=MAX_LENGTH, max_substrings=MAX_SUBSTRINGS):
    """Stop, naming the file and line, before an input the model's memory cannot hold (module notes).

    Raises
    ------
    CorpusFormatError
        An utterance longer than `max_length` symbols, or more than `max_substrings` substrings in all.
    """
    lengths = [len(symbols) for symbols in utterances]
    longest = max(range(len(lengths)), key=lengths.__getitem__)
    for number, length in enumerate(lengths, start=1):
        if length > max_length:
            raise CorpusFormatError(f"{length} symbols, more than --max-length {max_length}: an utterance's memory "
                                    "grows with the square of its length and its time with the cube; split long "
                                    "lines (at pauses or punctuation) or raise --max-length", path, number)
    substrings = sum(length * (length + 1) // 2 for length in lengths)
    if substrings > max_substrings:
        raise CorpusFormatError(f"{substrings:,} substrings (the sum over utterances of T (T + 1) / 2), more than "
                                f"--max-substrings {max_substrings:,}: the model keeps each as a candidate word "
                                f"(about 0.75 KB each, {substrings * 0.75e-6:.1f} GB); split long lines (the "
                                f"longest, line {longest + 1}, has {lengths[longest]} symbols), segment fewer "
                                "lines at a time, or raise --max-substrings", path)


def _split_as(words, symbols, path, number):
    """Cut a line's symbols where the gold words' characters end (words: str each, symbols joined)."""
    out, position = [], 0
    for word in words:
        taken, length = [], 0
        while length < len(word) and position < len(symbols):
            taken.append(symbols[position])
            length += len(symbols[position])
            position += 1
        if "".join(taken) != word:
            raise CorpusFormatError(f"the gold word {word!r} does not match the input symbols "
                                    f"{' '.join(taken) or '(none left)'!r}", path, number)
        out.append(tuple(taken))
    if position < len(symbols):
        raise CorpusFormatError(f"the gold words end before the input symbols do (left: "
                                f"{' '.join(symbols[position:])!r})", path, number)
    return out


def _gold_words(line, symbols, path, number, written):
    """A gold line's words in the file's format (`written`: "tagged", "tabs" or "joined"; module notes)."""
    if written == "tagged":
        words = _brent_phonemes(line, path, number)
    elif written == "tabs":
        words = [tuple(word.split()) for word in line.split("\t")]
        if not all(words):
            raise CorpusFormatError("an empty word between two tabs", path, number)
    else:
        return _split_as(line.split(), symbols, path, number)
    if [s for word in words for s in word] != symbols:
        raise CorpusFormatError("the gold symbols differ from the input's: "
                                f"{' '.join(s for word in words for s in word)!r} against {' '.join(symbols)!r}",
                                path, number)
    return words


def read_gold(path, utterances):
    """The gold words of each input utterance (module notes for the formats), in the input's order.

    Parameters
    ----------
    path : str
        The gold file: one line for each input line.
    utterances : list of list of str
        `read_utterances`' result.

    Raises
    ------
    CorpusFormatError
        Naming the gold file and line: words that do not spell the input's symbols, an empty line, or a
        line without an input line (or the first input line without a gold line).
    """
    lines = _lines(path)
    written = ("tagged" if any(_WORD_END in line.split() for line in lines)
               else "tabs" if any("\t" in line for line in lines) else "joined")
    gold = []
    for number, (line, symbols) in enumerate(zip(lines, utterances), start=1):
        if not line.strip():
            raise CorpusFormatError(f"an empty line against the input's {' '.join(symbols)!r}", path, number)
        gold.append(_gold_words(line, symbols, path, number, written))
    if len(lines) > len(utterances):
        raise CorpusFormatError(f"a gold line beyond the input's {len(utterances)} lines", path, len(utterances) + 1)
    if len(lines) < len(utterances):
        raise CorpusFormatError(f"the gold file ends here, but the input has {len(utterances)} lines",
                                path, len(lines))
    return gold


def separators(args, utterances):
    """(phone separator, word separator) of the output: the options, else tagged when a symbol has several
    characters (module notes), else wordseg's segmented text (symbols joined, words separated by a space)."""
    phone, word = args.phone_separator, args.word_separator
    if phone is None and word is None:
        several = not args.chars and any(len(symbol) > 1 for symbols in utterances for symbol in symbols)
        return TAGGED if several else ("", " ")
    phone = "" if phone is None else phone
    word = " " if word is None else word
    if not word or word == phone or (not word.strip() and word in phone):
        raise ValueError(f"--word-separator {word!r} must be non-empty and tell words apart from the symbols "
                         f"(--phone-separator {phone!r})")
    return phone, word


def format_words(words, phone, word):
    """An utterance's words as an output line (module notes): words joined by `word`, or closed by it when it
    is a marker, each word's symbols joined by `phone`."""
    if not word.strip():
        return word.join(phone.join(w) for w in words)
    return " ".join(f"{phone.join(w)} {word}" for w in words)


def degenerate(words, utterances):
    """A warning when a segmentation puts boundaries at almost none or almost all of the places between two
    symbols (the thresholds FEW_BOUNDARIES and MANY_BOUNDARIES), saying what to try; else None."""
    places = sum(len(symbols) - 1 for symbols in utterances)
    if places == 0:
        return None
    boundaries = sum(len(found) - 1 for found in words)
    share = boundaries / places
    if share < FEW_BOUNDARIES:
        whole = sum(len(found) == 1 for found, symbols in zip(words, utterances) if len(symbols) > 1)
        longer = sum(len(symbols) > 1 for symbols in utterances)
        return (f"almost no word boundaries ({boundaries} in {places} places between two symbols, {100 * share:.1f} %; "
                f"{whole} of the {longer} utterances of several symbols left whole): try --algorithm mcmc --iterations "
                "200 --anneal 10,100, a larger --concentration (e.g. 1000: new words cost less), or shorter lines")
    if share > MANY_BOUNDARIES:
        return (f"a boundary between almost every two symbols ({100 * share:.1f} % of the places): try a smaller "
                "--concentration, --grammar colloc, or larger symbols (phonemes or syllables, not letters)")
    return None


def _grammar(args, utterances):
    """The grammar to learn: ``--grammar`` as given, or with ``--vowels`` the colloc-syllable grammar over
    those vowels and every other symbol of the input as a consonant."""
    from ..models.adaptor import syllable_grammar

    if args.vowels is None:
        return args.grammar
    if args.grammar != "colloc-syllable":
        raise ValueError("--vowels goes with --grammar colloc-syllable (the only grammar with syllables)")
    vowels = args.vowels.split()
    symbols = dict.fromkeys(symbol for utterance in utterances for symbol in utterance)
    return syllable_grammar(vowels, [symbol for symbol in symbols if symbol not in vowels])


def _sampler_defaults(args):
    """Fill the options mcmc was not given from `SAMPLER_DEFAULTS` (py-cfg's start as wordseg ships it)."""
    for name, value in SAMPLER_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, value)


def _untrained(args, utterances, restarts, anneal):
    """The adaptor grammar the options describe, refusing input whose symbols its grammar cannot derive."""
    from ..models.adaptor import AdaptorGrammar

    options = {name: value for name, value in (("a", args.discount), ("b", args.concentration),
                                               ("alpha", args.alpha), ("truncation", args.truncation),
                                               ("n_iter", args.iterations))
               if value is not None}
    model = AdaptorGrammar(_grammar(args, utterances), estimate_hyperparameters=bool(args.estimate_hyperparameters),
                           anneal=anneal, resample_tables=bool(args.resample_tables), algorithm=args.algorithm,
                           random_state=args.seed, n_init=restarts, **options)
    unknown = model.underivable_symbol(utterances)
    if unknown is not None:
        number = unknown[0] + 1
        hint = " (give --vowels to build it over the input's own symbols)" if args.grammar == "colloc-syllable" else ""
        raise CorpusFormatError(f"the symbol {unknown[1]!r} is not a terminal of the grammar {args.grammar}{hint}; "
                                f"its terminals: {model.terminals_text()}", args.input, number)
    return model


def run_segment(args):
    if args.iterations is not None and args.iterations < 1:
        raise ValueError(f"--iterations must be at least 1, got {args.iterations}")
    if args.restarts is not None and args.restarts < 1:
        raise ValueError(f"--restarts must be at least 1, got {args.restarts}")
    if args.max_length < 1 or args.max_substrings < 1:
        raise ValueError("--max-length and --max-substrings must be at least 1")
    if args.model is not None and (args.scheduler is not None or args.workers is not None):
        raise ValueError("--scheduler and --workers train on shards; --model segments without training")
    sharded = cluster_requested(args, SHARDED_ALGORITHMS, "cvbayes segment")
    restarts = args.restarts if args.restarts is not None else (5 if args.algorithm == "vb" else 1)
    from ..models.adaptor import AdaptorGrammar
    from ..models.adaptor import parse_anneal

    if args.anneal is not None and args.algorithm != "mcmc":
        raise ValueError("--anneal is for --algorithm mcmc (only the sampler has a temperature)")
    if args.resample_tables and args.algorithm != "mcmc":
        raise ValueError("--resample-tables is for --algorithm mcmc (the sampler's table-label move)")
    if args.algorithm == "mcmc" and args.model is None:
        _sampler_defaults(args)
    anneal = None if args.anneal is None else parse_anneal(args.anneal)

    utterances = read_utterances(args.input, args.chars)
    check_size(utterances, args.input, args.max_length, args.max_substrings)
    gold = read_gold(args.gold, utterances) if args.gold else None
    phone, word = separators(args, utterances)
    if args.model is not None:
        # a saved model segments the input as it is: nothing is learned, the training options do not apply
        model = AdaptorGrammar.load(args.model)
        restarts = len(model.restart_objectives_)
        started = trained = time.perf_counter()
    else:
        model = _untrained(args, utterances, restarts, anneal)
        started = time.perf_counter()
        with connect(args.scheduler, args.workers, "cvbayes segment") as client:
            model.fit(utterances, progress=not (args.quiet or args.json), **({"client": client} if sharded else {}))
        trained = time.perf_counter()
        if args.save_model is not None:
            model.save(args.save_model)
    words = model.segment(utterances)
    segmented = time.perf_counter()
    text = "".join(format_words(found, phone, word) + "\n" for found in words)
    warning = degenerate(words, utterances)
    to_stdout = args.output in (None, "-")
    if to_stdout:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_text(args.output, text)
    report = {"input": args.input, "utterances": len(utterances), "symbols": sum(map(len, utterances)),
              "chars": args.chars, "grammar": args.grammar if args.model is None else None,
              "vowels": args.vowels, "algorithm": model.algorithm, "loaded_model": args.model,
              "saved_model": args.save_model if args.model is None else None,
              "iterations": len(model.history_), "seed": args.seed, "restarts": restarts,
              "restart_objectives": model.restart_objectives_,
              "model": model.settings(),
              "training_seconds": round(trained - started, 3), "segmenting_seconds": round(segmented - trained, 3),
              "objective": model.history_[-1].objective if model.history_ else None,
              "words": sum(map(len, words)), "lexicon_size": len({w for utterance in words for w in utterance}),
              "output": None if to_stdout else args.output, "phone_separator": phone, "word_separator": word,
              "warnings": [] if warning is None else [warning]}
    learned = (f"the model of {args.model} ({model.algorithm}, {report['iterations']} iterations)"
               if args.model is not None else
               f"{args.grammar} grammar, {model.algorithm}, {report['iterations']} iterations"
               + (f" (the medoid of {restarts} starts)" if restarts > 1 else "")
               + f" in {report['training_seconds']} s")
    lines_out = [f"{report['utterances']} utterances, {report['symbols']} symbols; {learned}; "
                 f"{report['words']} words, {report['lexicon_size']} word types"]
    if report["saved_model"] is not None:
        lines_out.append(f"model saved to {args.save_model}")
    if gold is not None:
        scores = segmentation_scores(words, gold)
        report["gold"] = args.gold
        report["scores"] = scores.as_dict()
        lines_out += [f"against {args.gold} (utterance-internal boundaries only; Goldwater et al. 2009):",
                      *segmentation_report(scores)]
    if warning is not None:     # even with --quiet: the output is not what anyone wants
        print(f"cvbayes segment: warning: {warning}", file=sys.stderr)
    # the segmentation is the command's data: when it takes standard output, the summary takes standard error
    stream = sys.stderr if to_stdout else sys.stdout
    if args.json:
        print(json.dumps(report), file=stream)
    elif not (args.quiet and to_stdout):
        print("\n".join(lines_out), file=stream)


def register(commands):
    """Add ``cvbayes segment`` to the ``cvbayes`` subcommands."""
    segment = commands.add_parser(
        "segment", help="unsupervised word segmentation with an adaptor grammar (vb, cvi, mcmc)",
        description="Learn a Pitman-Yor adaptor grammar (unigram words, collocations of words, or collocations "
                    "with syllable structure; Johnson and Goldwater 2009) from unsegmented utterances and write "
                    "each utterance cut into words. Input: one utterance a line, symbols separated by spaces "
                    "(or --chars). Output: words separated by spaces, each word's symbols joined (or the format of "
                    "--phone-separator and --word-separator; symbols of several characters keep their spaces and "
                    "each word is closed by ';eword'). With --gold, "
                    "token, boundary and lexicon precision, recall and F1 (Goldwater, Griffiths and Johnson "
                    "2009; boundaries inside utterances only). The model is trained and scored on the same "
                    "utterances, as in the published evaluations.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    segment.add_argument("input", help="unsegmented utterances, one a line ('-': standard input)")
    segment.add_argument("--grammar", default="unigram",
                         help="unigram (default), colloc, colloc-syllable (its vowels and consonants are Brent's "
                              "phonemes unless --vowels says otherwise), or an adaptor grammar file")
    segment.add_argument("--vowels", default=None,
                         help="colloc-syllable: the symbols that can be a syllable's nucleus, separated by spaces "
                              "(e.g. 'a e i o u' with --chars); every other symbol of the input is a consonant")
    segment.add_argument("--algorithm", choices=ALGORITHMS, default=DEFAULT_ALGORITHM,
                         help="mcmc (the default: Johnson et al. 2007's sampler from py-cfg's start, 200 sweeps; the "
                              "best token F1 a second across Brent, HKCanCor, Buckeye and English letters: "
                              "docs/results/wordseg/segment_defaults.md), vb (Cohen et al. 2010; the medoid of 5 "
                              "starts; the fastest) or cvi (collapsed VI; slower, best on HKCanCor's unigram grammar)")
    segment.add_argument("--restarts", type=int, default=None,
                         help="fits from as many seeds, keeping the one whose segmentation agrees most with the "
                              "others' (the final objective prefers undersegmentations; default 5 for vb, 1 for cvi "
                              "and mcmc)")
    segment.add_argument("--estimate-hyperparameters", action=argparse.BooleanOptionalAction, default=None,
                         help="learn the Pitman-Yor a and b after each pass (mcmc samples them, vb and cvi optimise "
                              "them; default: on for mcmc, off for vb and cvi); an a of 0 stays 0 (a Dirichlet "
                              "process): give --discount > 0 to learn it. cvi with it gains on Brent (token F1 colloc "
                              "72.0 against 59.2) but loses on HKCanCor (68.2 against 70.3): "
                              "docs/results/wordseg/reference_settings.md")
    segment.add_argument("--chars", action="store_true",
                         help="every character (extended grapheme cluster: a letter with its combining marks) is a "
                              "symbol; white space in the input is removed")
    segment.add_argument("-p", "--phone-separator", default=None,
                         help="output: between the symbols of a word (wordseg's option; default: nothing, or ' ' "
                              "when a symbol has several characters)")
    segment.add_argument("-w", "--word-separator", default=None,
                         help="output: between words, or, when not white space, a marker closing every word "
                              "(wordseg's ';eword'; default: ' ', or ';eword' when a symbol has several characters)")
    segment.add_argument("--max-length", type=int, default=MAX_LENGTH,
                         help=f"stop, naming the line, at an utterance of more symbols (default {MAX_LENGTH}): its "
                              "memory grows with the square of its length")
    segment.add_argument("--max-substrings", type=int, default=MAX_SUBSTRINGS,
                         help=f"stop when the utterances have more substrings in all, the sum of T (T + 1) / 2 "
                              f"(default {MAX_SUBSTRINGS:,}, about 3 GB)")
    segment.add_argument("--iterations", type=int, default=None,
                         help="passes over the utterances (default: 200 sweeps for mcmc, the model's 20 for vb and "
                              "cvi)")
    segment.add_argument("--gold", default=None,
                         help="gold segmentation to score against, one line an input line: words separated by spaces "
                              "with their symbols joined, words separated by tabs with their symbols by spaces, or "
                              "';eword' closing each word (Brent's format)")
    segment.add_argument("-o", "--output", default="-", help="segmentation file (default: standard output)")
    segment.add_argument("--save-model", default=None, metavar="PATH",
                         help="write the trained model there (an .npz archive) to segment other text with --model")
    segment.add_argument("--model", default=None, metavar="PATH",
                         help="segment the input with a model saved by --save-model instead of training one (the "
                              "training options do not apply)")
    segment.add_argument("--anneal", default=None, metavar="T0,SWEEPS",
                         help="mcmc: anneal from temperature T0 to 1 over the first SWEEPS sweeps (Johnson and "
                              "Goldwater 2009; e.g. 10,400 with --iterations 600)")
    segment.add_argument("--resample-tables", action=argparse.BooleanOptionalAction, default=None,
                         help="mcmc: resample every table's inner parse each sweep (Johnson's table-label move, "
                              "py-cfg's -R -1; colloc: a cached collocation can change its words; default on)")
    segment.add_argument("--discount", type=float, default=None,
                         help="Pitman-Yor discount a of the adapted nonterminals (default: 0.0001 for mcmc, py-cfg's "
                              "start; the model's, 0, for vb and cvi)")
    segment.add_argument("--concentration", type=float, default=None,
                         help="Pitman-Yor concentration b of the adapted nonterminals the grammar does not set "
                              "(default: 10000 for mcmc, py-cfg's start; the model's, 1, for vb and cvi; "
                              "colloc-syllable sets its own)")
    segment.add_argument("--alpha", type=float, default=None,
                         help="Dirichlet pseudo-count of the base rules (default: the model's)")
    segment.add_argument("--truncation", type=int, default=None,
                         help="vb: candidate words kept per adapted nonterminal (default: the model's)")
    segment.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    add_cluster_arguments(segment, "/".join(SHARDED_ALGORITHMS))
    segment.add_argument("--quiet", action="store_true", help="no progress bar (and no summary when the "
                                                              "segmentation goes to standard output)")
    segment.add_argument("--json", action="store_true",
                         help="print settings, times and (with --gold) the scores as JSON: on standard error "
                              "when the segmentation goes to standard output, else on standard output")
    segment.set_defaults(handler=run_segment)
    return segment
