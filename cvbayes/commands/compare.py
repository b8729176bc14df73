"""``cvbayes compare``: the main job, every HMM learner on a Brown corpus in one table."""
from tqdm.auto import tqdm

from ..data import ambiguity
from ..models.hmm import TAGGING_ALGORITHMS
from ..tagging import fit_tagger, load_corpus, random_baseline, tag_dictionary
from .options import add_common, add_priors, emit, hmm_algorithms


def run_compare(args):
    """The main job: every algorithm on a Brown corpus, semi-supervised (§3.8.1) or unsupervised (§3.8.2)."""
    corpus = load_corpus(args.corpus, tagset=args.tagset, n_sentences=args.sentences)
    dictionary = tag_dictionary(corpus, args.dictionary, args.d)
    rows = []
    algorithms = hmm_algorithms(args.algorithms, "compare")
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
    priors = ("each learner's default alpha, beta" if args.alpha is None and args.beta is None else
              f"alpha = {'default' if args.alpha is None else args.alpha}, "
              f"beta = {'default' if args.beta is None else args.beta}")
    lines = [f"{corpus.source}: {corpus.n_tokens} tokens, K = {len(corpus.tagset)} states; {setting}; "
             f"{priors}, seed {args.seed}"]
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
    lines.append(f"{'algorithm':<10}{'alpha':>7}{'beta':>7}{'iters':>6}{'seconds':>9}"
                 + "".join(f"{k[:14]:>16}" for k in keys))
    for row in rows:
        lines.append(f"{row['algorithm']:<10}{row['alpha']:>7g}{row['beta']:>7g}{row['iterations']:>6}"
                     f"{row['train_seconds']:>9.1f}"
                     + "".join(f"{row[k]:>16.3f}" for k in keys))
    lines.append("\nMaximum posterior decoding under the posterior-mean parameters (MAP for EM); "
                 "CGS anneals from temperature 2.0 to 0.08.")
    emit(args, report, lines)



def register(commands):
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
    add_priors(compare)
    add_common(compare)
    compare.set_defaults(handler=run_compare)

