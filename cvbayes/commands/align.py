"""``cvbayes align`` and ``cvbayes evaluate-alignment``."""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict

import numpy as np

from ..files import atomic_write
from ..models.alignment.corpus import ParallelCorpus, read_fast_align, read_gold_alignments, read_parallel, read_pharaoh, write_pharaoh
from ..models.alignment.evaluate import score_alignment
from ..models.alignment.force import NULL_WORD, force_align, read_translation_table
from ..models.alignment.model import (ALGORITHMS, BATCH_SIZE, COLLAPSED, COLLAPSED_PRIOR, DEFAULT_ITERATIONS, KAPPA,
                                     MAX_JUMP, MODELS, NULL_PROB, OBJECTIVES, OTHER_PRIOR, TAU0, Aligner, default_prior)
from ..models.alignment.priors import make_priors, read_priors, write_priors
from ..models.alignment.symmetrize import SYMMETRIZATIONS, symmetrize
from .options import check_writable

# pairs with a longer side are skipped, as eflomal and GIZA++ do by default
MAX_LENGTH = 200


def _iterations(text: str):
    """'N' (both models) or 'N,M' (IBM1, HMM)."""
    parts = text.split(",")
    try:
        numbers = [int(part) for part in parts]
    except ValueError:
        numbers = []
    if len(numbers) not in (1, 2):
        raise ValueError(f"--iterations takes N or N,M, got {text!r}")
    return numbers[0] if len(numbers) == 1 else tuple(numbers)


def _direction_report(aligner: Aligner, n_tokens: int) -> dict:
    n_iterations = len(aligner.history_)
    return {"seconds": aligner.seconds_,
            "target_tokens_per_second": n_tokens * n_iterations / aligner.seconds_ if aligner.seconds_ else None,
            "history": [asdict(record) for record in aligner.history_]}


def _skip_long_pairs(corpus: ParallelCorpus, max_length: int, quiet: bool) -> ParallelCorpus:
    """The corpus with both sides of every pair longer than ``max_length`` emptied (no links, an empty
    output line), with a warning naming them: the chains of one pair cost O(I x J) memory."""
    too_long = [k for k, (s, t) in enumerate(zip(corpus.source, corpus.target))
                if max(s.size, t.size) > max_length]
    if not too_long:
        return corpus
    if not quiet:
        shown = ", ".join(str(k + 1) for k in too_long[:10]) + (", ..." if len(too_long) > 10 else "")
        print(f"cvbayes align: warning: skipped {len(too_long)} sentence pairs with more than {max_length} "
              f"tokens on a side (lines {shown}); their output lines are empty (--max-length)", file=sys.stderr)
    empty = np.zeros(0, dtype=np.int32)
    skipped = set(too_long)
    return ParallelCorpus([empty if k in skipped else s for k, s in enumerate(corpus.source)],
                          [empty if k in skipped else t for k, t in enumerate(corpus.target)],
                          corpus.source_vocabulary, corpus.target_vocabulary)


def _write_table(aligner: Aligner, corpus: ParallelCorpus, path) -> None:
    """One direction's -p table: fast_align's 'source<TAB>target<TAB>log t' lines."""
    source, target, log_prob = aligner.translation_table()
    source_words = corpus.source_vocabulary.decode(np.maximum(source, 0))
    target_words = corpus.target_vocabulary.decode(target)
    with atomic_write(path, "w", encoding="utf-8") as out:
        for f, word, e, value in zip(source.tolist(), source_words, target_words, log_prob.tolist()):
            out.write(f"{NULL_WORD if f < 0 else word}\t{e}\t{value:.6g}\n")


def _table_path(base, method, direction):
    """Where -p writes (and -f reads) a direction's table: FILE, and FILE.reverse for the reverse
    direction when both are trained."""
    return base if direction == "forward" or method == "reverse" else base + ".reverse"


def run_align(args) -> None:
    if args.input is not None and (args.source or args.target):
        raise SystemExit("cvbayes align: give either -i FILE or --source SRC --target TGT, not both")
    if args.input is None and not (args.source and args.target):
        raise SystemExit("cvbayes align: give --source SRC and --target TGT, or -i FILE with 'source ||| target' "
                         "lines")
    method = "reverse" if args.reverse else args.symmetrization
    directions_run = [d for d in ("forward", "reverse") if method != {"forward": "reverse", "reverse": "forward"}[d]]
    if args.variational_bayes and args.algorithm == "em":
        raise SystemExit("cvbayes align: -v asks for a Dirichlet prior, which --algorithm em does not use")
    if args.max_length < 1:
        raise SystemExit(f"cvbayes align: --max-length must be at least 1, got {args.max_length}")
    if args.no_null_word and args.model == "ibm1" and not (args.favor_diagonal or args.force_align):
        raise SystemExit("cvbayes align: -N leaves NULL out of the HMM aligner; IBM Model 1 here always has its "
                         "NULL word (use --model hmm, the default)")
    if args.force_align is not None and args.parameters is not None:
        raise SystemExit("cvbayes align: -f aligns with the tables of an earlier -p; it learns none to write")
    if args.force_align is not None and args.priors is not None:
        raise SystemExit("cvbayes align: -f aligns with fixed tables; --priors biases learning, and -f learns nothing")
    if args.parameters is not None:
        for direction in directions_run:
            check_writable(_table_path(args.parameters, method, direction))
    if args.write_priors is not None:
        check_writable(args.write_priors)
    priors = read_priors(args.priors) if args.priors is not None else None
    tables = {}
    if args.force_align is not None:
        tables = {d: read_translation_table(_table_path(args.force_align, method, d)) for d in directions_run}
    if not args.quiet and (args.optimize_tension or args.tension is not None):
        print("cvbayes align: note: -o and -T (fast_align's diagonal tension) have no analogue here: the HMM "
              "learns its jump distribution; ignored", file=sys.stderr)
    n_iter = _iterations(args.iterations) if args.iterations else None
    corpus = (read_fast_align(args.input, args.lowercase) if args.input is not None
              else read_parallel(args.source, args.target, args.lowercase))
    if len(corpus) == 0 or corpus.n_source_tokens + corpus.n_target_tokens == 0:
        raise ValueError(f"{args.input or args.source}: no sentence pairs to align (the input is empty)")
    corpus = _skip_long_pairs(corpus, args.max_length, args.quiet)
    if priors is not None and not args.quiet:
        print(f"cvbayes align: {priors.used(corpus)} of {len(priors.lexical)} lexical priors used (the others name "
              f"words the corpus does not have)", file=sys.stderr)
        if priors.fertility:
            print(f"cvbayes align: note: {len(priors.fertility)} fertility priors (FERF/FERR) ignored: these "
                  f"models have no fertility", file=sys.stderr)
    prior = args.prior if args.prior is not None else default_prior(args.algorithm)
    options = dict(model="hmm" if args.favor_diagonal else args.model, algorithm=args.algorithm, n_iter=n_iter,
                   prior=prior, random_state=args.seed, null_prob=0.0 if args.no_null_word else args.null_prob,
                   max_jump=args.max_jump)
    if args.algorithm in ("svi", "scvi"):
        options.update(batch_size=args.batch_size, kappa=args.kappa, tau0=args.tau0)
    started = time.perf_counter()
    directions = {}
    links = {}
    scores = []
    for direction in directions_run:
        data = corpus if direction == "forward" else corpus.reversed()
        if tables:
            found, pair_scores = force_align(data, tables[direction], null=not args.no_null_word)
            directions[direction] = {"table": _table_path(args.force_align, method, direction)}
        else:
            direction_priors = priors if priors is None or direction == "forward" else priors.reversed()
            aligner = Aligner(**options, priors=direction_priors).fit(data, progress=not args.quiet)
            found, pair_scores = aligner.links(), aligner.pair_log_likelihoods() if args.scores else None
            directions[direction] = _direction_report(aligner, data.n_target_tokens)
            if args.parameters:
                _write_table(aligner, data, _table_path(args.parameters, method, direction))
        links[direction] = found if direction == "forward" else [{(i, j) for j, i in pair} for pair in found]
        scores.append(pair_scores)
    if args.write_priors is not None:
        write_priors(make_priors(corpus, links.get("forward"), links.get("reverse")), args.write_priors)
    if len(links) == 2:
        links = symmetrize(links["forward"], links["reverse"], method)
    else:
        (links,) = links.values()
    seconds = time.perf_counter() - started
    # -s: per pair, one score a direction (forward first)
    per_pair = list(zip(*scores)) if args.scores else None
    write_pharaoh(links, sys.stdout if args.output == "-" else args.output, per_pair)
    if args.json:
        first = DEFAULT_ITERATIONS[args.algorithm] if n_iter is None else n_iter
        report = {"pairs": len(corpus), "source_tokens": corpus.n_source_tokens,
                  "target_tokens": corpus.n_target_tokens, **options,
                  "n_iter": list(first) if isinstance(first, tuple) else first,
                  "symmetrization": method, "seconds": seconds,
                  "tokens_per_second": (corpus.n_source_tokens + corpus.n_target_tokens) / seconds,
                  "objective_is": OBJECTIVES[args.algorithm], "directions": directions}
        if priors is not None:
            report["priors"] = {"file": args.priors, "lexical": len(priors.lexical),
                                "lexical_used": priors.used(corpus)}
        if tables:
            report = {key: report[key] for key in ("pairs", "source_tokens", "target_tokens", "symmetrization",
                                                   "seconds", "tokens_per_second", "directions")}
            report["force_align"] = True
        # the alignments are the command's data: the summary takes the other stream
        print(json.dumps(report), file=sys.stderr if args.output == "-" else sys.stdout)


def run_evaluate_alignment(args) -> None:
    predicted = read_pharaoh(args.predicted)
    sure, possible = read_gold_alignments(args.gold)
    if args.possible is not None:
        extra_sure, extra_possible = read_gold_alignments(args.possible)
        if len(extra_possible) != len(sure):
            raise SystemExit(f"cvbayes evaluate-alignment: {args.possible} has {len(extra_possible)} lines "
                             f"but {args.gold} has {len(sure)}")
        possible = [p | q for p, q in zip(possible, extra_possible)]
    if len(predicted) != len(sure):
        raise SystemExit(f"cvbayes evaluate-alignment: {args.predicted} has {len(predicted)} lines "
                         f"but {args.gold} has {len(sure)}")
    scores = score_alignment(predicted, sure, possible)
    if args.json:
        json.dump(scores, sys.stdout, indent=2)
        print()
        return
    print(f"precision {scores['precision']:.4f}\nrecall    {scores['recall']:.4f}\nAER       {scores['aer']:.4f}")
    print(f"({scores['n_predicted']} predicted, {scores['n_sure']} sure, {scores['n_possible']} possible links)")


def register(commands) -> None:
    """Add ``align`` and ``evaluate-alignment`` to the ``cvbayes`` subcommands."""
    align = commands.add_parser(
        "align", help="word-align a parallel corpus (IBM1 or HMM; EM, VB, CVI-1, CVI-2, CGS, SVI or SCVI)",
        description="Align a sentence-aligned parallel corpus (thesis §3.8.3) and write Pharaoh 'i-j' lines "
                    "(i source position, j target position, 0-based) to standard output. Both directions "
                    "are trained and symmetrised unless --symmetrization is forward or reverse. IBM Model 1 "
                    "runs first and starts the HMM, as GIZA++ does.")
    align.description += (
        " fast_align's options are accepted with fast_align's meanings: -i, -r, -d, -o, -v, -a, -T, -I, -p, -s, -q, "
        "-N, -f "
        "(see each below; -o and -T have no analogue here and are ignored, saying so). Unlike fast_align, both "
        "directions are trained and symmetrised by default (-r or --symmetrization forward for one direction), "
        "the alignments go to --output (standard output by default), and our own options are long ones only.")
    align.add_argument("--source", help="source side: one sentence a line, tokens separated by spaces")
    align.add_argument("--target", help="target side, line by line parallel to --source")
    align.add_argument("-i", "--input", help="one file of 'source ||| target' lines (fast_align's -i)")
    align.add_argument("-d", "--favor-diagonal", action="store_true",
                       help="fast_align's -d (favour the diagonal): the HMM aligner, whose learned jump "
                            "distribution favours it; the same as --model hmm, which is already the default")
    align.add_argument("-o", "--optimize-tension", action="store_true",
                       help="fast_align's -o (optimise the diagonal tension): no analogue, because the HMM "
                            "learns its whole jump distribution; accepted and ignored")
    align.add_argument("-T", "--tension", type=float, default=None,
                       help="fast_align's -T (starting diagonal tension): no analogue (see -o); accepted and "
                            "ignored")
    align.add_argument("-v", "--variational-bayes", action="store_true",
                       help="fast_align's -v (a Dirichlet prior on the translation tables, mean-field VB): every "
                            "algorithm here but em has one, so -v keeps --algorithm (default cvi1, collapsed "
                            "VB, which the thesis prefers to mean-field VB; --algorithm vb is fast_align's) and "
                            "only refuses em")
    align.add_argument("-I", "--iterations", default=None,
                       help="N for both models (fast_align's -I) or N,M for IBM1 and HMM, passes for svi and "
                            "scvi (default: " + "; ".join(f"{a} {n1},{n2}" for a, (n1, n2) in DEFAULT_ITERATIONS.items())
                            + ")")
    align.add_argument("-a", "--prior", type=float, default=None,
                       help="Dirichlet prior on translation rows and jump buckets (fast_align's -a). Default "
                            f"{COLLAPSED_PRIOR:g} for the collapsed algorithms ({', '.join(COLLAPSED)}): on the "
                            "Greek-English Gospels it gave 5-6 AER points fewer than the thesis's 0.1 "
                            "(docs/results/align_nt/development.md); "
                            f"{OTHER_PRIOR:g} for em, vb and svi, whose exp E[log t] underflows below 0.01")
    align.add_argument("-p", "--parameters", metavar="FILE", default=None,
                       help="fast_align's -p: write the final translation table as 'source<TAB>target<TAB>log "
                            f"t(target | source)' lines, NULL written {NULL_WORD}, one a stored entry (every word "
                            "pair that shares a sentence pair; fast_align drops entries below its beam). The "
                            "table is em's MAP estimate or, for the other algorithms, the posterior mean of the "
                            "final counts. With both directions trained, the reverse table (source and target "
                            "swapped) goes to FILE.reverse")
    align.add_argument("-s", "--scores", action="store_true",
                       help="fast_align's -s: end each alignment line with ' ||| ' and the pair's log p(target | "
                            "source) under the final tables (one E-step on the tables of -p; fast_align also adds a "
                            "length model, which this aligner does not have); with both directions trained, two "
                            "scores, forward then reverse; nan for a pair that was skipped")
    align.add_argument("--max-length", type=int, default=MAX_LENGTH,
                       help=f"skip sentence pairs with more than this many tokens on a side, with a warning, and "
                            f"write an empty line for them (default {MAX_LENGTH}, as eflomal and GIZA++ do)")
    align.add_argument("--model", choices=MODELS, default="hmm", help="alignment model (default hmm)")
    align.add_argument("--algorithm", choices=ALGORITHMS, default="cvi1",
                       help="training algorithm (default cvi1, as the thesis)")
    align.add_argument("-q", "--p0", "--null-prob", dest="null_prob", type=float, default=NULL_PROB,
                       help=f"HMM: fixed probability p0 of aligning to NULL (fast_align's -q; default {NULL_PROB}, "
                            f"fast_align's 0.08)")
    align.add_argument("-N", "--no-null-word", action="store_true",
                       help="fast_align's -N: no NULL word, every target word links to a source word (the HMM "
                            "aligner's p0 = 0; IBM Model 1, which starts it, keeps its NULL)")
    align.add_argument("-f", "--force-align", metavar="FILE", default=None,
                       help="fast_align's -f: align the input with the table an earlier run wrote with -p FILE "
                            "(and FILE.reverse for the reverse direction), learning nothing: each target word to "
                            "the source word or NULL of the highest t(target | source), IBM Model 1's rule (the "
                            "table holds no jump distribution); word pairs the table lacks get 1e-9")
    align.add_argument("--priors", metavar="FILE", default=None,
                       help="eflomal's --priors: prior knowledge as Dirichlet pseudo-counts, one tab-separated "
                            "entry a line: 'LEX src trg alpha' (or eflomal's older 'src trg alpha'; <NULL> the NULL "
                            "word) adds alpha to t(trg | src) forward and t(src | trg) reverse, 'HMMF jump alpha' "
                            "and 'HMMR jump alpha' to the forward and reverse jump bucket of that width (clipped "
                            "to +-M); FERF/FERR fertility lines are ignored (no fertility here). Every algorithm "
                            "uses them (em: MAP under them). Entries naming words the corpus lacks are counted "
                            "and reported")
    align.add_argument("--write-priors", metavar="FILE", default=None,
                       help="write a priors file from this run's alignments, as eflomal-makepriors does: LEX "
                            "counts of the forward links (the reverse ones with -r), HMMF/HMMR jump counts of each "
                            "direction trained (with eflomal's end-of-sentence jump), FERF/FERR fertilities; "
                            "read it back with --priors")
    align.add_argument("--max-jump", type=int, default=MAX_JUMP,
                       help=f"HMM: jump widths are clipped to +-M (default {MAX_JUMP})")
    align.add_argument("--batch-size", type=int, default=BATCH_SIZE,
                       help=f"svi, scvi: sentence pairs a minibatch (default {BATCH_SIZE})")
    align.add_argument("--kappa", type=float, default=KAPPA,
                       help=f"svi, scvi: step size rho_m = (tau0 + m)^-kappa (default {KAPPA})")
    align.add_argument("--tau0", type=float, default=TAU0, help=f"svi, scvi: see --kappa (default {TAU0:g})")
    align.add_argument("--symmetrization", choices=SYMMETRIZATIONS, default="grow-diag-final-and",
                       help="how to combine the two directions; forward (target words to source words, "
                            "fast_align's default) or reverse train one direction only "
                            "(default grow-diag-final-and)")
    align.add_argument("-r", "--reverse", action="store_true",
                       help="same as --symmetrization reverse (fast_align's -r)")
    align.add_argument("--lowercase", action="store_true", help="lowercase both sides before aligning")
    align.add_argument("--seed", type=int, default=0,
                       help="random seed of the Gibbs sampler and of the minibatches (default 0)")
    align.add_argument("--output", default="-", help="alignment file (default: standard output)")
    align.add_argument("--json", action="store_true",
                       help="print statistics as JSON (time, tokens per second, iterations, objective history): "
                            "on standard error when the alignments go to standard output, else on standard output")
    align.add_argument("--quiet", action="store_true", help="no progress bars or warnings on standard error")
    align.set_defaults(handler=run_align)

    evaluate = commands.add_parser(
        "evaluate-alignment", help="precision, recall and AER of Pharaoh alignments against gold",
        description="Score predicted Pharaoh alignments against gold ones (Och and Ney 2003): precision "
                    "|A∩P|/|A|, recall |A∩S|/|S|, AER 1-(|A∩S|+|A∩P|)/(|A|+|S|). Gold lines write sure links "
                    "'i-j' and possible links 'i?j'; without possible links every gold link is sure.")
    evaluate.add_argument("predicted", help="predicted alignments, one Pharaoh line per sentence pair")
    evaluate.add_argument("--gold", required=True, help="gold alignments: sure 'i-j', possible 'i?j'")
    evaluate.add_argument("--possible", default=None,
                          help="a second gold file whose links (of either kind) are possible links")
    evaluate.add_argument("--json", action="store_true", help="print the scores as JSON")
    evaluate.set_defaults(handler=run_evaluate_alignment)
