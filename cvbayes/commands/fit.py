"""``cvbayes fit``: train an HMM or HDP-HMM tagger on a corpus and save it."""
import warnings

import numpy as np

from ..chains.occupancy import METHODS as OCCUPANCY_METHODS
from ..models.hdp_hmm import ALGORITHMS as HDP_ALGORITHMS
from ..models.hdp_hmm import HDPHMM
from ..models.hmm import ALGORITHMS, NothingToLearnWarning
from ..models.hmm_shards import SHARDED_ALGORITHMS
from ..tagging import fit_tagger, load_corpus, tag_dictionary
from .options import (add_checkpoint_arguments, add_cluster_arguments, add_common, add_corpus, add_priors,
                      announce_resume, connect, count, emit, positive_int, remove_checkpoint)

# the HDP-HMM's emission prior without --beta (the learners' table, DEFAULT_PRIORS, is the finite HMM's)
HDP_BETA = 0.1


def run_fit(args):
    hdp = args.model == "hdp-hmm"
    algorithms = HDP_ALGORITHMS if hdp else ALGORITHMS
    args.algorithm = args.algorithm or ("cvi" if hdp else "cvi2")
    if args.algorithm not in algorithms:
        raise SystemExit(f"cvbayes fit: --model {args.model} takes --algorithm {', '.join(algorithms)}")
    if args.burn_in is not None and not (hdp and args.algorithm == "cvi"):
        raise SystemExit("cvbayes fit: --burn-in is for --model hdp-hmm --algorithm cvi")
    if args.merge != "none" and not (hdp and args.algorithm == "cvi"):
        raise SystemExit("cvbayes fit: --merge is for --model hdp-hmm --algorithm cvi")
    if hdp and args.dictionary != "none":
        raise SystemExit("cvbayes fit: the HDP-HMM learns its states without a tag dictionary")
    corpus = load_corpus(args.corpus, args.format, args.tagset, args.sentences, tag=args.tag)
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
    burn_in = args.iterations // 2 if args.burn_in is None else args.burn_in
    try:
        with connect(args.scheduler, args.workers, "cvbayes fit") as client, warnings.catch_warnings():
            # a run that cannot learn is refused before it starts, not saved as if all went well
            warnings.simplefilter("error", NothingToLearnWarning)
            model, states, result = fit_tagger(
                corpus, args.algorithm, args.alpha, args.beta, args.iterations, args.seed, dictionary=dictionary,
                n_states=n_states, progress=not (args.quiet or args.json), batch_size=args.batch_size,
                kappa=args.kappa, subchain_length=args.subchain_length, n_init=args.restarts,
                checkpoint=args.checkpoint, checkpoint_every=args.checkpoint_every,
                model=HDPHMM(n_states, gamma=args.gamma, sigma=args.sigma,
                             beta=HDP_BETA if args.beta is None else args.beta, occupancy=args.occupancy,
                             burn_in=burn_in, merge=None if args.merge == "none" else args.merge) if hdp else None,
                **({"client": client} if sharded else {}))
    except NothingToLearnWarning:
        raise SystemExit(f"cvbayes fit: {args.corpus} holds one sentence (one line), and {args.algorithm} leaves "
                         f"one sentence out at a time, so it would learn nothing; give one sentence a line, or "
                         f"--algorithm cvi3 (or scvi) with --subchain-length N to cut it into pieces") from None
    model.save(args.output)
    result.pop("curve")
    used = int(np.unique(states).size)
    result["states_used"] = used
    if hdp:
        learned = (model.gamma_, model.sigma_) != (args.gamma, args.sigma)
        result.update(effective_states=model.n_effective_states_, gamma=model.gamma_, sigma=model.sigma_,
                      hyperparameters_learned=learned, **({"burn_in": burn_in} if args.algorithm == "cvi" else {}))
    report = {"model": args.output, "corpus": corpus.source, "tokens": corpus.n_tokens, "states": n_states,
              "dictionary": args.dictionary, **result}
    scores = ", ".join(f"{k} {v:.3f}" for k, v in result.items()
                       if k in ("accuracy", "many_to_one", "one_to_one", "v_measure"))
    lines = [f"{args.algorithm}: {args.iterations} passes in {result['train_seconds']:.1f} s "
             f"({result['wall_seconds']:.1f} s with the start, numba's compilation on first use and decoding)"
             + (f"; on the training corpus: {scores}" if scores else ""),
             f"decoding uses {used} of the {n_states} states"]
    if hdp:
        lines.append(f"{model.n_effective_states_} of {n_states} states cover 99 % of the tokens; "
                     + (f"learned gamma {model.gamma_:.3g}, sigma {model.sigma_:.3g}" if learned else
                        f"gamma {args.gamma:g} and sigma {args.sigma:g} were not learned: "
                        + (f"the burn-in of {burn_in} passes is not shorter than the run (give --burn-in below "
                           f"--iterations)" if args.algorithm == "cvi" else f"{args.algorithm} keeps them fixed")))
    lines.append(f"model saved to {args.output}")
    remove_checkpoint(args.checkpoint, report, lines)
    emit(args, report, lines)


def register(commands):
    fit = commands.add_parser("fit", help="train an HMM or HDP-HMM tagger and save it",
                              description="Train a Bayesian HMM, or an HDP-HMM that learns how many states to "
                                          "use (thesis ch. 5), on a corpus and save the model to a file "
                                          "that 'cvbayes tag' and 'cvbayes evaluate' load.")
    add_corpus(fit)
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
    fit.add_argument("--burn-in", type=count, default=None, metavar="N",
                     help="hdp-hmm, cvi: passes before gamma and sigma are learned (default half of --iterations; "
                          "the states must separate first, thesis §5.5)")
    fit.add_argument("--merge", choices=("none", "auto"), default="none",
                     help="hdp-hmm, cvi: 'auto' tries merging and deleting states every 10 passes and keeps the "
                          "best move when the pass's objective is no lower for it (HDPHMM's merge; default none)")
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
    add_cluster_arguments(fit, "/".join(SHARDED_ALGORITHMS))
    add_checkpoint_arguments(fit)
    add_priors(fit, HDP_BETA)
    add_common(fit)
    fit.set_defaults(handler=run_fit)
