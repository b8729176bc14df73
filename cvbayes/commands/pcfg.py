"""``cvbayes pcfg`` and ``cvbayes pcfg-la``: train a PCFG (hand-written grammar or induction) or a PCFG
with latent annotations, parse sentences with it, and print the learned grammar.

Files: sentences are one a line, tokens separated by white space (``--chars``: every character a
token, as the morphology grammars read words); an empty line is no sentence (``parse`` writes an
empty line for it).  Trees are written one a line in Penn brackets; a sentence the grammar cannot
derive gets ``(())``.  ``pcfg grammar`` prints ``probability LHS -> RHS`` lines, the grammar format
`cvbayes.trees.parse_grammar` reads.
"""
import json
import sys

import numpy as np

from ..data.errors import CorpusFormatError, read_text_file
from ..data.trees import format_tree
from ..files import write_text
from ..models.pcfg import ALGORITHMS, PCFG, SHARDED_ALGORITHMS
from ..models.pcfg_la import ALGORITHMS as LA_ALGORITHMS
from ..models.pcfg_la import SHARDED_ALGORITHMS as LA_SHARDED_ALGORITHMS
from ..models.pcfg_la import PCFGLA
from .options import (add_checkpoint_arguments, add_cluster_arguments, add_common, announce_resume, cluster_requested,
                      connect, count, positive_int, remove_checkpoint)

NO_TREE = "(())"


def read_sentences(path, chars=False):
    """Each line's tokens (a list of str; empty for an empty line) of a text file ('-': standard input)."""
    text = sys.stdin.read() if path == "-" else read_text_file(path)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    sentences = [list("".join(line.split())) if chars else line.split() for line in lines]
    if not any(sentences):
        raise CorpusFormatError("no sentences (the input is empty)", path)
    return sentences


def _write_trees(args, sentences, trees):
    """One line an input line: the tree in Penn brackets, (()) without one, empty for an empty line."""
    found = iter(trees)
    lines = []
    for sentence in sentences:
        tree = next(found) if sentence else None
        lines.append("" if not sentence else NO_TREE if tree is None else format_tree(tree))
    text = "".join(line + "\n" for line in lines)
    if args.output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_text(args.output, text)


def _summary(args, report, lines):
    """JSON (--json) or text unless --quiet; on standard error when the trees took standard output."""
    stream = sys.stderr if getattr(args, "output", None) == "-" else sys.stdout
    if args.json:
        print(json.dumps(report), file=stream)
    elif not args.quiet:
        print("\n".join(lines), file=stream)


# -- pcfg ---------------------------------------------------------------------------------------------

def run_pcfg_fit(args):
    sharded = cluster_requested(args, SHARDED_ALGORITHMS, "cvbayes pcfg fit")
    if (args.grammar is None) == (args.nonterminals is None):
        raise SystemExit("cvbayes pcfg fit: give --grammar FILE (a hand-written grammar) or --nonterminals N "
                         "(induction over every A -> B C and A -> w)")
    sentences = [s for s in read_sentences(args.sentences, args.chars) if s]
    extra = ([s for s in read_sentences(args.terminals_from, args.chars) if s] if args.terminals_from else None)
    model = PCFG(n_nonterminals=args.nonterminals, grammar=args.grammar, alpha=args.alpha,
                 max_substring=args.max_substring, algorithm=args.algorithm, n_iter=args.iterations,
                 random_state=args.seed, n_init=args.restarts, batch_size=args.batch_size)
    announce_resume(args.checkpoint, args.iterations, "cvbayes pcfg fit", args.quiet or args.json)
    with connect(args.scheduler, args.workers, "cvbayes pcfg fit") as client:
        model.fit(sentences, terminals_from=extra, progress=not (args.quiet or args.json),
                  checkpoint=args.checkpoint, checkpoint_every=args.checkpoint_every,
                  **({"client": client} if sharded else {}))
    model.save(args.output)
    seconds = sum(record.seconds for record in model.history_)
    report = {"model": args.output, "sentences": len(sentences), "tokens": sum(map(len, sentences)),
              "rules": int(model.counts_.shape[0]), "algorithm": args.algorithm, "iterations": args.iterations,
              "train_seconds": seconds, "objective": model.history_[-1].objective,
              "objective_is": model.objective_name_}
    lines = [f"{args.algorithm}: {args.iterations} passes over {len(sentences)} sentences ({report['rules']} rules) "
             f"in {seconds:.1f} s", f"model saved to {args.output}"]
    remove_checkpoint(args.checkpoint, report, lines)
    _summary(args, report, lines)


def run_pcfg_parse(args):
    model = PCFG.load(args.model)
    sentences = read_sentences(args.sentences, args.chars)
    kept = [s for s in sentences if s]
    trees = model.parse(kept, estimate=args.estimate)
    _write_trees(args, sentences, trees)
    log_likelihood = model.score_sentences(kept, estimate=args.estimate)
    report = {"model": args.model, "sentences": len(kept), "parsed": sum(t is not None for t in trees),
              "log_likelihood": float(log_likelihood[np.isfinite(log_likelihood)].sum()), "output": args.output}
    _summary(args, report, [f"parsed {report['parsed']} of {len(kept)} sentences; log-likelihood of those "
                            f"parsed {report['log_likelihood']:.2f}"])


def run_pcfg_grammar(args):
    model = PCFG.load(args.model)
    probabilities = model.rule_probs_
    shown = np.flatnonzero(probabilities >= args.min_prob)
    rules = [(float(probabilities[r]), model.grammar_.describe(r)) for r in shown]
    if args.json:
        print(json.dumps({"model": args.model, "rules": [{"probability": p, "rule": text} for p, text in rules],
                          "hidden": int(probabilities.size - shown.size)}))
        return
    lines = [f"{p:.6g} {text}" for p, text in rules]
    if shown.size < probabilities.size:
        lines.append(f"# {probabilities.size - shown.size} rules below --min-prob {args.min_prob:g} not shown")
    print("\n".join(lines))


# -- pcfg-la ------------------------------------------------------------------------------------------

def run_la_fit(args):
    sharded = cluster_requested(args, LA_SHARDED_ALGORITHMS, "cvbayes pcfg-la fit")
    model = PCFGLA(n_subtypes=args.subtypes, alpha=args.alpha, horizontal=args.horizontal, vertical=args.vertical,
                   min_count=args.min_count, algorithm=args.algorithm, n_iter=args.iterations,
                   random_state=args.seed)
    with connect(args.scheduler, args.workers, "cvbayes pcfg-la fit") as client:
        model.fit(args.treebank, progress=not (args.quiet or args.json), **({"client": client} if sharded else {}))
    model.save(args.output)
    report = {"model": args.output, "symbols": model.grammar_.n_symbols, "words": model.grammar_.n_words,
              "subtypes": args.subtypes, "algorithm": args.algorithm, "iterations": args.iterations,
              "train_seconds": model.train_seconds, "objective": model.history_[-1].objective}
    _summary(args, report, [f"{args.algorithm}, H = {args.subtypes}: {args.iterations} passes in "
                            f"{model.train_seconds:.1f} s ({report['symbols']} symbols, {report['words']} words)",
                            f"model saved to {args.output}"])


def run_la_parse(args):
    model = PCFGLA.load(args.model)
    sentences = read_sentences(args.sentences)
    kept = [s for s in sentences if s]
    trees = model.parse(kept, decoder=args.decoder, pruning=args.pruning or None)
    _write_trees(args, sentences, trees)
    report = {"model": args.model, "sentences": len(kept), "parsed": sum(t is not None for t in trees),
              "decoder": args.decoder, "output": args.output}
    _summary(args, report, [f"parsed {report['parsed']} of {len(kept)} sentences ({args.decoder})"])


def run_la_grammar(args):
    model = PCFGLA.load(args.model)
    grammar, tables = model.grammar_, model.tables_
    symbols = grammar.symbols
    rules = []
    for (r, a, b, c) in zip(*np.nonzero(tables.binary >= args.min_prob)):
        parent, left, right = grammar.binary_rules[r]
        rules.append((tables.binary[r, a, b, c],
                      f"{symbols[parent]}[{a}] -> {symbols[left]}[{b}] {symbols[right]}[{c}]"))
    for (r, a, b) in zip(*np.nonzero(tables.unary >= args.min_prob)):
        parent, child = grammar.unary_rules[r]
        rules.append((tables.unary[r, a, b], f"{symbols[parent]}[{a}] -> {symbols[child]}[{b}]"))
    for (r, a) in zip(*np.nonzero(tables.lexical >= args.min_prob)):
        parent, word = grammar.lexical_rules[r]
        word = json.dumps(grammar.words[word], ensure_ascii=False)      # quoted, as parse_grammar's terminals
        rules.append((tables.lexical[r, a], f"{symbols[parent]}[{a}] -> {word}"))
    total = tables.binary.size + tables.unary.size + tables.lexical.size
    if args.json:
        print(json.dumps({"model": args.model, "subtypes": model.n_subtypes, "hidden": total - len(rules),
                          "rules": [{"probability": float(p), "rule": text} for p, text in rules]}))
        return
    lines = [f"{p:.6g} {text}" for p, text in rules]
    if len(rules) < total:
        lines.append(f"# {total - len(rules)} annotated rules below --min-prob {args.min_prob:g} not shown")
    print("\n".join(lines))


# -- the parsers --------------------------------------------------------------------------------------

def _sentences_argument(parser, chars=True):
    parser.add_argument("sentences", help="one sentence a line, tokens separated by spaces ('-': standard input)")
    if chars:
        parser.add_argument("--chars", action="store_true",
                            help="every character is a token (white space removed), as words for morphology")


def _reader(verbs, action, help_text, command, handler):
    """The parser of an action that reads a saved model (and takes no seed)."""
    parser = verbs.add_parser(action, help=help_text)
    parser.add_argument("model", help=f"model file written by 'cvbayes {command} fit'")
    add_common(parser, seed=False)
    parser.set_defaults(handler=handler)
    return parser


def _parse_options(parser, chars=True):
    _sentences_argument(parser, chars)
    parser.add_argument("-o", "--output", default="-", help="tree file (default: standard output)")


def _min_prob(parser, default):
    parser.add_argument("--min-prob", type=float, default=default,
                        help=f"print only rules of at least this probability (default {default:g})")


def register(commands):
    pcfg = commands.add_parser(
        "pcfg", help="PCFGs: learn rule probabilities (em, vb, cvi, scvi, mh), parse, print the grammar",
        description="A probabilistic context-free grammar with Dirichlet priors (thesis ch. 4): a hand-written "
                    "grammar (README: PCFGs; <any> rules for morphology) or induction over N nonterminals.")
    verbs = pcfg.add_subparsers(dest="pcfg_command", required=True, metavar="ACTION")
    fit = verbs.add_parser("fit", help="learn the rule probabilities from sentences and save the model")
    _sentences_argument(fit)
    fit.add_argument("-o", "--output", required=True, help="model file to write (.npz)")
    fit.add_argument("--grammar", default=None, metavar="FILE", help="a hand-written grammar file")
    fit.add_argument("--nonterminals", type=positive_int, default=None, metavar="N",
                     help="grammar induction: every A -> B C over N nonterminals and every A -> w")
    fit.add_argument("--algorithm", choices=tuple(ALGORITHMS), default="cvi", help="learner (default cvi)")
    fit.add_argument("--alpha", type=float, default=0.1, help="Dirichlet pseudo-count of every rule (default 0.1)")
    fit.add_argument("--iterations", type=positive_int, default=50, help="passes over the sentences (default 50)")
    fit.add_argument("--restarts", type=positive_int, default=1,
                     help="fits from seeds --seed, --seed + 1, ...; the best final objective is kept (default 1)")
    fit.add_argument("--batch-size", type=positive_int, default=100, help="scvi: sentences a minibatch (default 100)")
    fit.add_argument("--max-substring", type=positive_int, default=None,
                     help="longest substring an <any> rule may rewrite to (default: no limit)")
    fit.add_argument("--terminals-from", default=None, metavar="FILE",
                     help="sentences to be parsed later: their tokens and substrings become terminals (no counts), "
                          "so that an <any> grammar can derive them")
    add_checkpoint_arguments(fit)
    add_cluster_arguments(fit, "/".join(SHARDED_ALGORITHMS))
    add_common(fit)
    fit.set_defaults(handler=run_pcfg_fit)

    parse = _reader(verbs, "parse", "Viterbi (CKY) trees of sentences under a saved model", "pcfg", run_pcfg_parse)
    _parse_options(parse)
    parse.add_argument("--estimate", choices=("fitted", "mean"), default="fitted",
                       help="the fitted rule probabilities (em's MAP; the posterior mean otherwise; default) or "
                            "the posterior mean of the counts for every algorithm (smooths em's zeros)")
    grammar = _reader(verbs, "grammar", "print the learned grammar, rule probabilities first", "pcfg",
                      run_pcfg_grammar)
    _min_prob(grammar, 1e-4)

    la = commands.add_parser(
        "pcfg-la", help="PCFGs with latent annotations: learn subtypes from a treebank, parse, print the grammar",
        description="Every treebank symbol split into H latent subtypes (Matsuzaki et al. 2005; thesis §4.5.3), "
                    "learned by em, vb or cvi from Penn-bracket trees; parsing by max-rule-product or Viterbi "
                    "with coarse-to-fine pruning.")
    verbs = la.add_subparsers(dest="pcfg_la_command", required=True, metavar="ACTION")
    fit = verbs.add_parser("fit", help="learn the subtypes' rule weights from a treebank and save the model")
    fit.add_argument("treebank", help="Penn-bracket trees (function tags and -NONE- removed when read)")
    fit.add_argument("-o", "--output", required=True, help="model file to write (.npz)")
    fit.add_argument("--subtypes", type=positive_int, default=2, metavar="H", help="subtypes a symbol (default 2)")
    fit.add_argument("--algorithm", choices=tuple(LA_ALGORITHMS), default="cvi", help="learner (default cvi)")
    fit.add_argument("--alpha", type=float, default=0.1,
                     help="Dirichlet pseudo-count of every annotated rule (default 0.1)")
    fit.add_argument("--iterations", type=positive_int, default=30, help="passes over the trees (default 30)")
    fit.add_argument("--horizontal", type=count, default=0, help="horizontal markovisation (default 0)")
    fit.add_argument("--vertical", type=positive_int, default=1, help="vertical markovisation (default 1)")
    fit.add_argument("--min-count", type=positive_int, default=2,
                     help="words seen fewer times become signatures such as UNK-INITCAP-ing (default 2)")
    add_cluster_arguments(fit, "/".join(LA_SHARDED_ALGORITHMS))
    add_common(fit)
    fit.set_defaults(handler=run_la_fit)

    parse = _reader(verbs, "parse", "parse sentences with a saved PCFG-LA", "pcfg-la", run_la_parse)
    _parse_options(parse, chars=False)
    parse.add_argument("--decoder", choices=("max-rule", "viterbi"), default="max-rule",
                       help="max-rule-product (Petrov and Klein 2007; default) or the Viterbi annotated derivation")
    parse.add_argument("--pruning", type=float, default=1e-4,
                       help="skip chart items whose posterior under the unsplit grammar is below this (default "
                            "1e-4; 0: parse the whole chart)")
    grammar = _reader(verbs, "grammar", "print the annotated rules A[a] -> B[b] C[c] and their weights", "pcfg-la",
                      run_la_grammar)
    _min_prob(grammar, 1e-3)
