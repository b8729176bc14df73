"""``cvbayes segment``: unsupervised word segmentation with a Pitman-Yor adaptor grammar.

Files
-----
* **Input**: one utterance a line, its symbols (phonemes, syllables) separated by white space; with
  ``--chars`` every character is a symbol and white space is removed first (the usual unsegmented text).
  Empty lines are kept as empty output lines and are not utterances.
* **Output**: one line an input line, its words separated by one space, each word's symbols joined with
  nothing between them (``y u w a n t`` -> ``yu want``).
* **Gold** (``--gold``): the same format as the output (words separated by spaces, each word's symbols
  joined), one line for each non-empty input line; a word's characters are matched against the input's
  symbols, so multi-character symbols work as long as no gold boundary falls inside one.  Lines in
  Brent's format (symbols separated by spaces, ``;eword`` closing each word, as ``br-phonemes.txt``) are
  read as such, so Brent's file is its own gold.
"""
import argparse
import json
import sys
import time

from ..data.errors import CorpusFormatError, read_text_file
from ..data.segmentation import _WORD_END, _brent_phonemes
from ..files import write_text
from ..metrics.segmentation import segmentation_report, segmentation_scores

ALGORITHMS = ("vb", "cvi", "mcmc")

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
    """The utterances of an input file: for each line its symbols (a list of str), None for an empty line.

    Raises
    ------
    CorpusFormatError
        Undecodable bytes, Brent's ``;eword`` markers (with the line), or no utterance at all.
    """
    utterances = []
    for number, line in enumerate(_lines(path), start=1):
        if chars:
            symbols = list("".join(line.split()))
        else:
            symbols = line.split()
            if _WORD_END in symbols:
                raise CorpusFormatError(f"the line holds Brent's '{_WORD_END}' word markers, i.e. it is already "
                                        f"segmented; remove them for the input (sed 's/ {_WORD_END}//g') and "
                                        "give the marked file as --gold", path, number)
        utterances.append(symbols or None)
    if not any(utterances):
        raise CorpusFormatError("no utterances (the input is empty)", path)
    return utterances


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


def read_gold(path, utterances):
    """The gold words of each input utterance (module notes for the format), in the input's order.

    Parameters
    ----------
    path : str
        The gold file: one line for each non-empty input line (empty lines are skipped).
    utterances : list of (list of str or None)
        `read_utterances`' result.

    Raises
    ------
    CorpusFormatError
        Naming the gold file and line: words that do not spell the input's symbols, or a line count
        that differs from the input's utterances.
    """
    wanted = [symbols for symbols in utterances if symbols is not None]
    lines = [(number, line) for number, line in enumerate(_lines(path), start=1) if line.strip()]
    if len(lines) != len(wanted):
        raise CorpusFormatError(f"{len(lines)} gold utterances (non-empty lines) against {len(wanted)} in the "
                                "input", path)
    gold = []
    for (number, line), symbols in zip(lines, wanted):
        tokens = line.split()
        if _WORD_END in tokens:
            words = _brent_phonemes(line, path, number)
            if [s for word in words for s in word] != symbols:
                raise CorpusFormatError("the gold symbols differ from the input's: "
                                        f"{' '.join(s for word in words for s in word)!r} against "
                                        f"{' '.join(symbols)!r}", path, number)
            gold.append(words)
        else:
            gold.append(_split_as(tokens, symbols, path, number))
    return gold


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


def run_segment(args):
    if args.iterations is not None and args.iterations < 1:
        raise ValueError(f"--iterations must be at least 1, got {args.iterations}")
    if args.restarts is not None and args.restarts < 1:
        raise ValueError(f"--restarts must be at least 1, got {args.restarts}")
    restarts = args.restarts if args.restarts is not None else (5 if args.algorithm == "vb" else 1)
    from ..models.adaptor import AdaptorGrammar
    from ..models.adaptor_mcmc import parse_anneal

    if args.anneal is not None and args.algorithm != "mcmc":
        raise ValueError("--anneal is for --algorithm mcmc (only the sampler has a temperature)")
    anneal = None if args.anneal is None else parse_anneal(args.anneal)

    lines = read_utterances(args.input, args.chars)
    utterances = [symbols for symbols in lines if symbols is not None]
    gold = read_gold(args.gold, lines) if args.gold else None
    options = {name: value for name, value in (("a", args.discount), ("b", args.concentration),
                                               ("alpha", args.alpha), ("truncation", args.truncation))
               if value is not None}
    model = AdaptorGrammar(_grammar(args, utterances), estimate_hyperparameters=args.estimate_hyperparameters,
                           anneal=anneal, **options)
    unknown = model.underivable_symbol(utterances)
    if unknown is not None:
        number = [n for n, symbols in enumerate(lines, start=1) if symbols is not None][unknown[0]]
        hint = " (give --vowels to build it over the input's own symbols)" if args.grammar == "colloc-syllable" else ""
        raise CorpusFormatError(f"the symbol {unknown[1]!r} is not a terminal of the grammar {args.grammar}{hint}; "
                                f"its terminals: {model.terminals_text()}", args.input, number)
    fit_options = {} if args.iterations is None else {"n_iter": args.iterations}
    started = time.perf_counter()
    model.fit(utterances, algorithm=args.algorithm, seed=args.seed, progress=not (args.quiet or args.json),
              n_init=restarts, **fit_options)
    trained = time.perf_counter()
    words = model.segment(utterances)
    segmented = time.perf_counter()
    found = iter(words)
    text = "".join((" ".join("".join(word) for word in next(found)) if symbols is not None else "") + "\n"
                   for symbols in lines)
    to_stdout = args.output in (None, "-")
    if to_stdout:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_text(args.output, text)
    report = {"input": args.input, "utterances": len(utterances), "symbols": sum(map(len, utterances)),
              "chars": args.chars, "grammar": args.grammar, "vowels": args.vowels, "algorithm": args.algorithm,
              "iterations": len(model.history_), "seed": args.seed, "restarts": restarts,
              "restart_objectives": model.restart_objectives_,
              "model": model.settings(),
              "training_seconds": round(trained - started, 3), "segmenting_seconds": round(segmented - trained, 3),
              "objective": model.history_[-1].objective if model.history_ else None,
              "words": sum(map(len, words)), "lexicon_size": len({word for utterance in words for word in utterance}),
              "output": None if to_stdout else args.output}
    lines_out = [f"{report['utterances']} utterances, {report['symbols']} symbols; {args.grammar} grammar, "
                 f"{args.algorithm}, {report['iterations']} iterations"
                 + (f" (best of {restarts} starts)" if restarts > 1 else "")
                 + f" in {report['training_seconds']} s; "
                 f"{report['words']} words, {report['lexicon_size']} word types"]
    if gold is not None:
        scores = segmentation_scores(words, gold)
        report["gold"] = args.gold
        report["scores"] = scores.as_dict()
        lines_out += [f"against {args.gold} (utterance-internal boundaries only; Goldwater et al. 2009):",
                      *segmentation_report(scores)]
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
                    "(or --chars). Output: words separated by spaces, each word's symbols joined. With --gold, "
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
    segment.add_argument("--algorithm", choices=ALGORITHMS, default="vb",
                         help="vb (Cohen et al. 2010; default: the best of 5 starts by its ELBO matches the published "
                              "MCMC unigram score on Brent), cvi (collapsed VI: undersegments, see the README) or mcmc "
                              "(Johnson et al. 2007; needs hundreds of sweeps)")
    segment.add_argument("--restarts", type=int, default=None,
                         help="fits from as many seeds, keeping the best final objective (default 5 for vb, 1 for "
                              "cvi and mcmc)")
    segment.add_argument("--estimate-hyperparameters", action="store_true",
                         help="learn the Pitman-Yor a and b after each pass (mcmc samples them, vb and cvi optimise "
                              "them); an a of 0 stays 0 (a Dirichlet process): give --discount > 0 to learn it")
    segment.add_argument("--chars", action="store_true",
                         help="every character is a symbol; white space in the input is removed")
    segment.add_argument("--iterations", type=int, default=None, help="passes over the utterances "
                                                                      "(default: the model's)")
    segment.add_argument("--gold", default=None,
                         help="gold segmentation to score against: words separated by spaces, each word's symbols "
                              "joined (as the output), or Brent's ';eword' format")
    segment.add_argument("-o", "--output", default="-", help="segmentation file (default: standard output)")
    segment.add_argument("--anneal", default=None, metavar="T0,SWEEPS",
                         help="mcmc: anneal from temperature T0 to 1 over the first SWEEPS sweeps (Johnson and "
                              "Goldwater 2009; e.g. 10,400 with --iterations 600)")
    segment.add_argument("--discount", type=float, default=None,
                         help="Pitman-Yor discount a of the adapted nonterminals (default: the model's)")
    segment.add_argument("--concentration", type=float, default=None,
                         help="Pitman-Yor concentration b (default: the model's)")
    segment.add_argument("--alpha", type=float, default=None,
                         help="Dirichlet pseudo-count of the base rules (default: the model's)")
    segment.add_argument("--truncation", type=int, default=None,
                         help="vb: candidate words kept per adapted nonterminal (default: the model's)")
    segment.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    segment.add_argument("--quiet", action="store_true", help="no progress bar (and no summary when the "
                                                              "segmentation goes to standard output)")
    segment.add_argument("--json", action="store_true",
                         help="print settings, times and (with --gold) the scores as JSON: on standard error "
                              "when the segmentation goes to standard output, else on standard output")
    segment.set_defaults(handler=run_segment)
    return segment
