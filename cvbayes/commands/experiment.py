"""``cvbayes experiment NAME``: re-run one of the thesis's experiments (and the package's own).

`EXPERIMENTS` is the registry: each experiment names the module of `cvbayes.experiments` that runs it
(through that module's ``EXPERIMENTS[name]``, given the parsed options), a line of help, a description,
and the options it takes; ``--out`` and ``--quiet`` are every experiment's.  A new experiment is one
entry here and one in its module's ``EXPERIMENTS``.  Options that several experiments read with one
meaning are declared once below and listed by each experiment that reads them.
"""
from dataclasses import dataclass
from importlib import import_module
from typing import NamedTuple

from .options import count, emit, hmm_algorithms, positive_int


class Option(NamedTuple):
    flags: tuple
    settings: dict

    def but(self, **settings):
        """This option with some of its settings changed (another default or help)."""
        return Option(self.flags, {**self.settings, **settings})


def option(*flags, **settings):
    return Option(flags, settings)


@dataclass(frozen=True)
class Experiment:
    module: str
    help: str
    description: str
    options: tuple = ()


def seeds(default, what="seeded runs a setting"):
    return option("--seeds", type=positive_int, default=default, help=f"{what} (default {default})")


def comma_list(text):
    return text.split(",")


ALGORITHMS = option("--algorithms", type=lambda text: hmm_algorithms(text, "experiment"),
                    default=["em", "vb", "cvi1", "cvi2", "cgs"], help="comma-separated (default: em,vb,cvi1,cvi2,cgs)")
ITERATIONS = option("--iterations", type=positive_int, default=50,
                    help="iterations of em/vb/cvi1/cvi2 (default 50; the thesis uses 200 unsupervised)")
CGS_ITERATIONS = option("--cgs-iterations", type=positive_int, default=500, help="annealed CGS sweeps (default 500)")
PASSES = option("--passes", type=positive_int, default=None, help="passes over the training data a run")
STATES = option("--states", type=positive_int, default=None, help="hidden states K")
K_VALUES = option("--k-values", type=positive_int, nargs="+", default=None, help="truncation levels K")
SEQUENCES = option("--sequences", type=positive_int, default=100, help="sequences a dataset (default 100)")
LENGTH = option("--length", type=positive_int, default=100, help="tokens a sequence (default 100)")
FIRST_SEED = option("--seed", type=int, default=0, help="the first seed: seeds SEED..SEED+N-1 (default 0)")
DEVELOP = option("--develop", action="store_true", help="the development grid instead of the test table")

# Part-of-speech tagging on Brown (thesis §3.8.1-3.8.2)
TAGGING = (option("--corpus", default="brown", help="'brown' (the fetched corpus) or a Brown folder"),
           ALGORITHMS, seeds(10), option("--seeds-all", type=int, default=0,
                                         help="seeded runs on the whole corpus (default: as --seeds)"),
           ITERATIONS, CGS_ITERATIONS)
TAGSET = option("--tagset", choices=("brown", "universal"), default="brown",
                help="the Brown tags (default) or the 12 universal tags")
SIZES = option("--sizes", nargs="+", default=["1000", "2000", "3000", "5000", "10000", "all"],
               help="training sizes in sentences, 'all' for the whole corpus")
GRID = (option("--grid", type=float, nargs="+", default=[0.003, 0.01, 0.03, 0.1, 0.3, 1.0],
               help="values tried for both alpha and beta"),
        option("--seed", type=int, default=0, help="the seed of every grid run (default 0)"))
TAGGING_NEEDS = "needs 'cvbayes data fetch brown'; writes results.json, table.md and PNG plots under --out"

# q(C_jk > 0) and the HDP-HMM (thesis ch. 5)
OCCUPANCY = (option("--budget", type=float, default=600.0,
                    help="seconds a K may take (default 600; 0: no limit): fig5.2 stops before the first I x T "
                         "whose estimated time would pass it, fig5.3 skips the exact search (keeping the "
                         "heuristic) where its estimate would; both say so"), seeds(5))


def occupancy(k_values, max_length):
    """fig5.2's and fig5.3's options: the shared ones and their own defaults of --k-values and --max-length."""
    return OCCUPANCY + (K_VALUES.but(help=f"truncation levels K (default {k_values})"),
                        option("--max-length", type=positive_int, default=None,
                               help=f"largest total length I x T (default {max_length})"))


HDP_ITERATIONS = option("--hdp-iterations", type=positive_int, default=None, help="CVI passes (default 150)")
EVALUATE_EVERY = option("--evaluate-every", type=positive_int, default=None,
                        help="evaluate after iteration 1 and every N (default 10)")
HDP_MODELS = option("--hdp-models", nargs="+", default=None, choices=("hmm", "hdp", "hdp-beta", "hmm-beta"),
                    help="hmm (finite HMM, Dir(0.1)), the HDP-HMM with beta from 100 (hdp) or from 0.1 W "
                         "(hdp-beta), the finite HMM with emissions Dir(100/W) (hmm-beta) (default hmm hdp)")
BURN_IN = option("--burn-in", type=int, default=None, help="passes before gamma and sigma are learned")

# Word alignment (thesis §3.8.3)
ALIGNMENT = (option("--algorithms", type=comma_list, default=["em", "vb", "cvi1", "cvi2", "cgs"],
                    help="comma-separated, of em, vb, cvi1, cvi2, cgs, svi, scvi (default em,vb,cvi1,cvi2,cgs)"),
             option("--models", default=None, help="comma-separated alignment models, hmm and/or ibm1"),
             option("--align-iterations", default=None,
                    help="iterations per algorithm as ALG=N or ALG=N+M (IBM1 + HMM), comma-separated, e.g. "
                         "'em=5+5,cgs=50' (default: the settings chosen on the Gospels)"),
             option("--prior", type=float, default=None,
                    help="Dirichlet prior of every algorithm (default: the one chosen on the Gospels)"))
BOOKS = option("--books", type=int, nargs="+", default=None, help="books to train and score on")

# Trees (thesis ch. 4)
PCFG = (ITERATIONS.but(help="passes of em, vb and cvi (default 50)"),
        CGS_ITERATIONS.but(help="Metropolis-Hastings sweeps of mh (default 500)"))
# the PCFG-LA's fits and parser (fig4.2 and fig4.2-split)
LA_ITERATIONS = option("--la-iterations", type=positive_int, default=50, help="passes of every fit (default 50)")
LA_PARSING = (option("--la-threshold", type=float, default=1e-4,
                     help="parsing's coarse-to-fine threshold (default 1e-4)"),
              option("--la-decoder", choices=("max-rule", "viterbi"), default="max-rule",
                     help="max-rule-product (default) or Viterbi decoding"))

EXPERIMENTS = {
    "grid-semi": Experiment(
        "pos", "choose alpha and beta on held-out data, semi-supervised (§3.8.1)",
        "Every algorithm on the grid of alpha x beta with a complete tag dictionary; later tagging experiments "
        f"take the chosen values from --out ({TAGGING_NEEDS}/grid_semi_brown).", TAGGING + GRID),
    "grid-unsup": Experiment(
        "pos", "choose alpha and beta on held-out data, unsupervised (§3.8.2)",
        f"The same grid without a tag dictionary ({TAGGING_NEEDS}/grid_unsup_TAGSET).", TAGGING + GRID + (TAGSET,)),
    "fig3.10": Experiment(
        "pos", "tagging accuracy against corpus size (Fig. 3.10)",
        f"Semi-supervised accuracy with a complete tag dictionary at each size ({TAGGING_NEEDS}/fig3_10).",
        TAGGING + (SIZES,)),
    "fig3.11": Experiment(
        "pos", "accuracy against iterations and time (Fig. 3.11, from fig3.10's runs)",
        "Reads fig3.10's runs on the largest size from --out and draws accuracy against iterations and "
        "training time, with the time per iteration (writes under --out/fig3_11).", TAGGING),
    "fig3.12": Experiment(
        "pos", "accuracy with incomplete tag dictionaries (Fig. 3.12)",
        f"Semi-supervised accuracy when words seen fewer than d times may take any tag ({TAGGING_NEEDS}/fig3_12).",
        TAGGING + (option("--size", type=positive_int, default=1000, help="training sentences (default 1000)"),
                   option("--d-values", type=int, nargs="+", default=[1, 2, 3, 5, 10],
                          help="dictionary thresholds d (default 1 2 3 5 10)"))),
    "fig3.13": Experiment(
        "pos", "unsupervised tagging, four metrics (Fig. 3.13)",
        "Many-to-one, one-to-one, variation of information and V-measure without a tag dictionary "
        f"({TAGGING_NEEDS}/fig3_13_TAGSET).", TAGGING + (TAGSET, SIZES)),
    "ewt-pos": Experiment(
        "ewt_pos", "Fig. 3.13's table on UD English EWT (K = 45, PTB tags, beta chosen on dev)",
        "Unsupervised tagging of EWT's test split with beta chosen on its dev split (--develop runs that grid); "
        "needs 'cvbayes data fetch ewt'; writes under --out/ewt_pos_test.",
        (ALGORITHMS, FIRST_SEED,
         option("--seeds", type=positive_int, default=None, help="seeds (default 3; 1 with --develop)"),
         PASSES.but(help="passes of every algorithm (default 200)"),
         DEVELOP.but(help="the beta grid on EWT dev instead of the test table"))),
    "defaults": Experiment(
        "defaults", "each HMM learner's default alpha and beta, chosen on EWT dev and Brown dev (K = 45)",
        "The alpha x beta grid of every learner on two development corpora of different genres, scored by M-1 "
        "and 1-1, and the chosen defaults (cvbayes.models.hmm.DEFAULT_PRIORS); --check compares the old defaults "
        "(0.1, 0.1) with the chosen ones on held-out text (EWT test, Brown press, Hebrew HTB test). Needs "
        "'cvbayes data fetch ewt' and 'brown' ('htb' for --check); writes under --out/defaults "
        "(--out/defaults_check); the grid takes about 30 min on a shared 2-core machine.",
        (ALGORITHMS.but(default=None, help="comma-separated (default: em,vb,cvi1,cvi2,cgs,svi,scvi)"),
         option("--seed", type=int, default=0, help="the first seed: seeds SEED..SEED+N-1 (default 0)"),
         seeds(2, "seeds a grid point and a check"),
         PASSES.but(help="passes of every run (default 50, HMM's n_iter)"),
         option("--check", action="store_true", help="old against new defaults on held-out text"))),
    "fig3.15": Experiment(
        "text_prediction", "SVI against SCVI-2 on PTB sentences (Fig. 3.15)",
        "Held-out predictive likelihood of SVI and SCVI-2 at several (kappa, M), with batch VB and CVI-2 as "
        "references; needs 'cvbayes data fetch ptb'; writes under --out/fig3_15.",
        (seeds(1), STATES.but(help="hidden states K (default 45)"),
         PASSES.but(help="passes over the training data a run (default 10)"),
         ITERATIONS.but(help="iterations of the batch references vb and cvi2 (default 50)"))),
    "fig3.16": Experiment(
        "text_prediction", "SVI against SCVI-2 at K = 20, 40, 80 on PTB and public-domain books (Fig. 3.16)",
        "Needs 'cvbayes data fetch ptb' and 'cvbayes data fetch texts'; writes under --out/fig3_16.",
        (seeds(1), PASSES.but(help="passes over the training data a run (default 10)"))),
    "fig3.17": Experiment(
        "text_prediction", "SCVI-3 against SVI on PTB as one long sequence (Fig. 3.17)",
        "Needs 'cvbayes data fetch ptb'; writes under --out/fig3_17.",
        (seeds(1), STATES.but(help="hidden states K (default 12)"),
         option("--steps", type=positive_int, default=None,
                help="minibatch steps a run (default 10,000, as the thesis)"))),
    "fig5.2": Experiment(
        "occupancy", "q(C_jk > 0) on simulated chains: the approximations' errors (Fig. 5.2, §5.4.4)",
        "The approximations of q(C_jk > 0) against the exact method along I x T; no data needed; writes under "
        "--out/fig5_2.",
        occupancy("10 50", "10^6")),
    "fig5.3": Experiment(
        "occupancy", "the length needed for all q(C_jk > 0) > 0.999 (Fig. 5.3, §5.4.4)",
        "No data needed; writes under --out/fig5_3.",
        occupancy("10 20 40 80 160 320", "10^7")),
    "fig5.4": Experiment(
        "hdp", "q(C_jk > 0) approximations along HDP-HMM CVI on Alice's letters (Fig. 5.4, 5.5)",
        "Needs 'cvbayes data fetch texts'; --sequences x --length letters; writes under --out/fig5_4.",
        (seeds(1), SEQUENCES, LENGTH, K_VALUES.but(help="truncation levels K (default 10 50)"), HDP_ITERATIONS,
         EVALUATE_EVERY)),
    "fig5.6": Experiment(
        "hdp", "q(C_jk > 0) approximations along HDP-HMM CVI on Brown sentences (Fig. 5.6)",
        "The first Brown sentences stand in for WSJ (needs 'cvbayes data fetch brown'); writes under --out/fig5_6.",
        (seeds(1), option("--hdp-sentences", type=positive_int, default=None, help="Brown sentences (default 450)"),
         K_VALUES.but(help="truncation levels K (default 10 50)"), HDP_ITERATIONS, EVALUATE_EVERY)),
    "fig5.7": Experiment(
        "hdp_states", "HDP-HMM CVI against beam sampling at finding the number of states (Fig. 5.7, §5.5.1)",
        "Synthetic data; writes under --out/fig5_7.",
        (seeds(10, "datasets a scenario"),
         option("--seed", type=int, default=0, help="the first dataset: datasets SEED..SEED+N-1, drawn from seeds "
                                                     "1000+SEED.. (default 0)"), SEQUENCES, LENGTH,
         option("--cvi-iterations", type=positive_int, default=1000, help="CVI passes (default 1000)"),
         option("--beam-iterations", type=positive_int, default=3000, help="beam-sampling iterations (default 3000)"),
         option("--scenarios", nargs="+", choices=("theta_pos", "theta_neg", "grammar"), default=None,
                help="the datasets to run (default all three)"),
         option("--algorithms", nargs="+", choices=("cvi", "cvi-local", "cvi-merge", "beam"), default=None,
                help="the learners to run (default all four); a subset keeps the others' runs from an earlier "
                     "results.json of the same settings"))),
    "fig5.9": Experiment(
        "hdp", "HDP-HMM CVI against finite CVI-2 on PTB subsets (Fig. 5.9)",
        "The HDP-HMM learns gamma, sigma and beta tau after --burn-in passes; needs 'cvbayes data fetch ptb'; "
        "writes under --out/fig5_9.",
        (seeds(1), option("--hdp-sizes", nargs="+", default=None,
                          help="training sizes in PTB sentences, 'all' for all (default 1000 5000)"),
         STATES.but(help="hidden states K (default 45)"), HDP_ITERATIONS.but(help="passes (default 200)"),
         EVALUATE_EVERY, BURN_IN.but(help="passes before the hyperparameters are learned (default half of "
                                          "--hdp-iterations)"), HDP_MODELS)),
    "fig5.10": Experiment(
        "hdp", "HDP-HMM SCVI against finite SCVI on PTB (Fig. 5.10)",
        "Five (kappa, M) settings; needs 'cvbayes data fetch ptb'; writes under --out/fig5_10.",
        (seeds(1), STATES.but(help="hidden states K (default 45)"), PASSES.but(help="passes (default 1)"), HDP_MODELS,
         option("--hdp-sentences", type=positive_int, default=None,
                help="use only the first N PTB training sentences (default all)"))),
    "dp-hmm-tidigits": Experiment(
        "tidigits", "a DP-HMM with Gaussian emissions on TIDIGITS MFCCs against the finite HMM",
        "Batch CVI on the 31 TIDIGITS utterances (standardised per cepstrum) against CVI-2 at the same K: "
        "effective states, learned gamma and sigma, held-out log-likelihood per frame; needs 'cvbayes data fetch "
        "tidigits'; writes under --out/dp_hmm_tidigits.",
        (seeds(3), STATES.but(help="truncation level K (default 60)"), ITERATIONS.but(help="passes (default 50)"),
         BURN_IN.but(help="passes before gamma and sigma are learned (default a third of --iterations)"))),
    "align-nt": Experiment(
        "alignment", "word alignment of the Greek NT to English against manual gold links (Fig. 3.14)",
        "HMM and IBM1 with em/vb/cvi1/cvi2/cgs and eflomal as an outside reference (thesis §3.8.3); needs "
        "'cvbayes data fetch nt'; with --develop it only chooses iterations and prior on the Gospels. Writes "
        "under --out/align_nt.",
        ALIGNMENT + (seeds(3, "CGS and eflomal runs"),
                     BOOKS.but(help="NT books to train and score on, 40 (Matthew) .. 66 (default all 27)"),
                     DEVELOP.but(help="run only the development grid on the Gospels (iterations x prior per "
                                      "algorithm) and write development.md/.json; later align-nt and align-bible "
                                      "runs with the same --out use its choices"))),
    "align-bible": Experiment(
        "alignment", "KJV English to RV1909 Spanish against Strong's-number links, time and memory by size",
        "Needs 'cvbayes data fetch bible'; writes under --out/align_bible.",
        ALIGNMENT + (seeds(1, "CGS and eflomal runs"), BOOKS.but(help="books 1 (Genesis) .. 66 to use (default all)"),
                     option("--max-verses", type=positive_int, default=None,
                            help="use only the first N verses (default all 31,084)"),
                     option("--verse-counts", nargs="+", default=None,
                            help="corpus sizes of the scaling runs, in verses, 'all' for every verse (default 1000 "
                                 "4000 all, about 15 min on 2 cores; the recorded results add 16000)"))),
    "lda": Experiment(
        "lda", "LDA's six learners against gensim, MALLET-style Gibbs and others on news and Brown",
        "Writes under --out/lda (with --out left at its default, docs/results/lda).",
        (option("--k-values", type=positive_int, nargs="+", default=None,
                help="numbers of topics (default 50; 20 50 100 for the full grid)"),
         PASSES.but(type=float, help="scales every learner's default passes (default 1)"),
         option("--seed", type=int, default=0, help="random seed (default 0)"))),
    "fig4.1-dmv": Experiment(
        "dmv", "the DMV with em/vb/cvi on UD EWT, HTB and PUD, content- and function-head gold (thesis §4.5.2)",
        "Every run scored against UD's trees and against them with function words as heads, with UPOS and XPOS "
        "tags. Needs 'cvbayes data fetch ewt', 'htb' and 'pud'; writes under --out/fig4_1_dmv (about 30-60 min).",
        (seeds(3, "CVI's seeds (sentence orders)"), PASSES.but(help="passes (default 100)"),
         option("--max-length", type=positive_int, default=None, help="training sentences' words (default 10)"),
         option("--treebanks", type=comma_list, default=["ewt", "htb", "pud"],
                help="comma-separated, of ewt, htb, pud (default all; pud needs ewt)"),
         option("--algorithms", type=comma_list, default=["em", "vb", "cvi"],
                help="comma-separated, of em, vb, cvi, scvi (default em,vb,cvi)"))),
    "fig4.1-morphology": Experiment(
        "pcfg", "PCFG morphology: em, vb, cvi and mh on Hebrew and English words (thesis §4.5.1)",
        "Needs 'cvbayes data fetch morphology'; writes under --out/fig4_1_morphology.", (seeds(5),) + PCFG),
    "pcfg-planted": Experiment(
        "pcfg", "PCFG learners on data from a planted grammar",
        "No data needed; writes under --out/pcfg_planted.", (seeds(3),) + PCFG),
    "fig4.2": Experiment(
        "pcfg_la", "PCFG-LA with em/vb/cvi at H subtypes on UD EWT trees converted to phrase structure",
        "Not the PTB (thesis §4.5.3); by default the thesis's protocol (H = 1 2 4 8, alpha in 1 0.1 0.01 0.001 "
        "chosen on the whole dev split, the best of 5 runs on dev, 50 passes); labelled P/R/F1/EX on test, time a "
        "pass, peak memory, parsing speed; needs 'cvbayes data fetch ewt'; writes under --out/fig4_2 (see "
        "docs/results/fig4_2/table.md for what it cost on a loaded 2-core machine).",
        (seeds(5, "runs"),
         option("--seed", type=int, default=0, help="the first seed: runs SEED..SEED+N-1 (default 0)"),
         option("--la-subtypes", type=positive_int, nargs="+", default=None,
                help="subtypes H to run (default 1 2 4 8)"),
         option("--la-alphas", type=float, nargs="+", default=None,
                help="the alpha grid of VB and CVI (default 1 0.1 0.01 0.001)"),
         LA_ITERATIONS,
         option("--la-dev-sentences", type=positive_int, default=None,
                help="choose alpha and the run on every k-th dev sentence, this many (default: the whole dev split)"),
         option("--la-select", choices=("dev", "objective"), default="dev",
                help="keep the run of the best dev F1 (default, the thesis) or of the best training objective"),
         option("--la-combine", nargs="+", default=None, metavar="FOLDER",
                help="write one table under --out from the results.json of runs on different H (run side by side)"),
         *LA_PARSING)),
    "fig4.2-split": Experiment(
        "pcfg_la_split", "PCFG-LA at H = 16: each H split from the H before it, trained with pruning",
        "Petrov et al. (2006)'s hierarchical splitting with coarse-to-fine pruning during training, for H where "
        "CVI's per-tree counts would not fit (H = 16: 3.2 GB unpruned); alpha and seed of the first H from "
        "docs/results/fig4_2/results.json (fig4.2's); test P/R/F1/EX, time a pass, peak memory; writes under "
        "--out itself (default docs/results/fig4_2/split).",
        (option("--algorithms", type=comma_list, default=["em", "vb", "cvi"],
                help="comma-separated, of em, vb, cvi (default all; run one a process for each one's peak memory)"),
         option("--la-subtypes", type=positive_int, nargs="+", default=[8, 16],
                help="the chain of H: the first from the treebank, each next split from the one before (default 8 16)"),
         option("--la-pruning", type=float, default=1e-4,
                help="training pruning threshold on the coarse node posteriors (default 1e-4)"),
         option("--la-unpruned", type=comma_list, default=None,
                help="comma-separated learners that also fit the last H from the same coarse grammar unpruned "
                     "(default none; CVI's H = 16 unpruned needs 3.2 GB for its per-tree counts alone)"),
         option("--la-test-sentences", type=positive_int, default=None,
                help="parse only the first N test sentences (default all 2,077)"),
         LA_ITERATIONS, *LA_PARSING)),
    "wordseg": Experiment(
        "wordseg", "word segmentation with adaptor grammars on Brent and a second language",
        "unigram, colloc and colloc-syllable by vb, cvi and mcmc on the Brent corpus and HKCanCor Jyutping "
        "('cvbayes data fetch hkcancor'), or Buckeye's surface phones ('cvbayes data fetch buckeye'): token, "
        "boundary and lexicon F1 beside Johnson and Goldwater's (2009) MCMC figures, the trivial segmentations, "
        "F1 by utterance length, and the reference's runs (benchmarks/bench_wordseg.py); training time; writes "
        "under --out/wordseg.",
        (option("--algorithms", type=comma_list, default=None, help="vb,cvi,mcmc (default: all three)"),
         FIRST_SEED,
         seeds(3), ITERATIONS.but(help="passes of vb and cvi (default 50)"),
         CGS_ITERATIONS.but(help="mcmc sweeps (default 500)"),
         option("--grammars", default=None,
                help="comma-separated grammars (default unigram,colloc,colloc-syllable; colloc-syllable runs on "
                     "Brent only: its terminals are Brent's phonemes)"),
         option("--corpora", default=None,
                help="comma-separated, of brent, hkcancor, eve, buckeye (default brent,hkcancor); the later ones "
                     "take as many utterances as the first"),
         option("--append", action="store_true",
                help="keep the runs already in OUT/wordseg/results.json (one of the same corpus, grammar, algorithm "
                     "and seed is replaced) and add this command's"),
         option("--utterances", type=positive_int, default=None,
                help="use only the first N utterances of each corpus (default: all of Brent, as many of the second "
                     "language)"),
         option("--quick", action="store_true", help="a smoke run (200 utterances, 2 passes, 1 seed)"),
         option("--discount", type=float, default=None,
                help="the Pitman-Yor discount a of every adapted nonterminal (default 0)"),
         option("--concentration", type=float, default=None,
                help="the Pitman-Yor concentration b of every adapted nonterminal the grammar does not set "
                     "(default 1)"),
         option("--estimate-hyperparameters", action="store_true",
                help="learn a and b after each pass (mcmc samples them, as Johnson and Goldwater 2009); an a of 0 "
                     "stays 0, so give --discount > 0 to learn it"),
         option("--anneal", default=None, metavar="T0,SWEEPS",
                help="mcmc: anneal from temperature T0 to 1 over the first SWEEPS sweeps"),
         option("--resample-tables", action="store_true",
                help="mcmc: resample every table's inner parse each sweep (Johnson's table-label move, py-cfg's "
                     "-R -1)"),
         option("--init", choices=("sample", "empty"), default=None,
                help="vb and cvi: their start (default: vb's sampled, cvi's empty; `AdaptorGrammar`'s init); "
                     "from 'empty' vb has no random draw, so it runs one start"))),
    "channel": Experiment(
        "channel", "recover a known edit channel from Brent's words: em, vb and cvi (issue 31's symbolic stage)",
        "cvbayes.EditChannel on (clean word, noisy word) pairs: every Brent word token passed through an edit "
        "channel drawn from the seed (substitutions within phoneme classes, deletions, insertions), the "
        "alignments latent; total variation between learned and true rows beside the table of the true "
        "alignments; writes under --out/channel.",
        (option("--algorithms", type=comma_list, default=None, help="em,vb,cvi (default: all three)"),
         FIRST_SEED, seeds(3), PASSES.but(help="passes of every learner (default 20)"),
         option("--noise", type=float, default=1.0,
                help="scales the true channel's deletion, substitution and insertion rates (default 1: "
                     "2-8%%, 5-20%% and 1-5%%; at most 3.57)"))),
    "noisy-words": Experiment(
        "noisy_words", "segment Brent's phonemes through a known random edit channel, or Buckeye's surface phones, "
        "with and without a learned channel (issue 31's symbolic stage)",
        "cvbayes.NoisyWords (the unigram adaptor grammar whose word tokens pass through an edit channel, vb) "
        "against cvbayes.AdaptorGrammar on the same noisy strings (cvi and vb): Brent's word tokens passed through "
        "a channel drawn from the seed (synthetic noise, as in 'experiment channel'); token and boundary F1 "
        "against the gold words on the surface string, total variation of the learned channel rows; writes under "
        "--out/noisy_words. With --corpus buckeye: Buckeye's surface phones against its word alignment (token, "
        "boundary and type F1, the trivial segmentations beside), the learned channel's most probable edits.",
        (FIRST_SEED, seeds(1), PASSES.but(help="passes of every learner (default 10)"),
         option("--corpus", choices=("brent", "buckeye"), default="brent",
                help="brent (synthetic noise, default) or buckeye (its surface phones, 'cvbayes data fetch "
                     "buckeye'; writes under docs/results/noisy_words/buckeye, or --out)"),
         option("--utterances", type=positive_int, default=1500,
                help="the first N utterances of the corpus (default 1500)"),
         option("--max-length", type=positive_int, default=None,
                help="buckeye only: the first N utterances of at most this many phones (default: any length)"),
         option("--noise", type=float, default=None,
                help="brent only: scales the true channel's deletion, substitution and insertion rates (default "
                     "1; at most 3.57)"),
         option("--grammar", choices=("unigram", "colloc"), default="unigram",
                help="brent only: the word layers' grammar (default unigram; colloc: NoisyWords vb and cvi over "
                     "the channel beside the channel-free colloc grammar)"))),
    "uld": Experiment(
        "uld", "lexicon discovery from speech: units, then words with and without a noisy channel, and joint rounds "
        "(issue 31)",
        "cvbayes.models.discovery.LexiconDiscovery on the synthetic Brent corpus ('cvbayes data fetch "
        "synthetic-brent'; its first trimmed utterances of the training voices, the same models reading the held-out "
        "voices): 1-best acoustic units into the unigram (--grammars: also colloc) adaptor grammar with a learned edit "
        "channel (NoisyWords), "
        "the same followed by joint rounds in which the words re-estimate the units, the same followed by rounds of "
        "one ELBO of both layers over n-best unit readings (vb), the grammar without the channel, "
        "and every utterance whole, by vb and cvi; zerospeech-tde's token, type and boundary F1, NED, "
        "coverage and grouping beside the ZeroSpeech 2017 baseline and topline; seconds a pass over an hour of "
        "audio; writes under --out/uld. With --corpus tidigits: word detection of the discovered types against the "
        "transcripts.",
        (FIRST_SEED, seeds(3), option("--algorithms", type=comma_list, default=None, help="vb,cvi (default both)"),
         option("--unit-passes", type=positive_int, default=30, help="passes of the unit layer (default 30)"),
         PASSES.but(help="passes of the word layer (default 10)"),
         option("--joint-rounds", type=count, default=3,
                help="rounds of the joint system (default 3; 0 leaves it out)"),
         option("--grammars", type=comma_list, default=None,
                help="unigram,colloc: the word layers' grammars, each on the same unit layer (default unigram); a "
                     "system LexiconDiscovery does not take for a grammar and learner is left out with a note"),
         option("--corpus", choices=("synthetic-brent", "tidigits"), default="synthetic-brent",
                help="synthetic-brent (default) or tidigits (real speech without time alignments: word detection "
                     "against the transcripts; writes under --out/uld/tidigits)"),
         option("--utterances", type=positive_int, default=500,
                help="synthetic-brent: the first N utterances of the training voices, and of the held-out voices "
                     "(default 500)"),
         option("--first", type=count, default=0,
                help="synthetic-brent: skip the first N utterances of the training voices (another slice of them; "
                     "default 0; the held-out voices' stay their first); writes under --out/uld/first_N"))),
    "units": Experiment(
        "units", "acoustic unit discovery: vb, cvi, gibbs, svi and scvi on TIDIGITS, planted and synthetic speech",
        "cvbayes.AcousticUnits (issue 30) on TIDIGITS (real speech; word-level checks: segments against the "
        "dictionary's phones, unit presence predicting words against shuffled units), planted (synthetic data "
        "drawn from the model itself) and synthetic-brent (synthetic speech, 'cvbayes data fetch "
        "synthetic-brent'; its train split, or 'synthetic-brent-test' for the held-out voices): boundary F1 at "
        "20 ms, purity, NMI, units used, seconds a pass and real-time factor beside the published TIMIT "
        "figures; writes under --out/units.",
        (option("--corpus", type=comma_list, default=["tidigits"],
                help="comma-separated, of tidigits, planted, synthetic-brent, synthetic-brent-test (default tidigits)"),
         option("--algorithms", type=comma_list, default=None, help="vb,cvi,gibbs,svi,scvi (default: all five)"),
         FIRST_SEED,
         seeds(3), PASSES.but(help="passes of every learner (gibbs: 5 sweeps a pass; default 30)"),
         option("--units", type=positive_int, default=None, help="the units' truncation (default 100)"),
         option("--states", type=positive_int, default=3, help="states of every unit's HMM (default 3)"),
         option("--components", type=positive_int, default=2, help="Gaussians of every state's mixture (default 2)"),
         option("--gamma", type=float, default=1.0, help="concentration of the units' Dirichlet process (default 1)"),
         option("--utterances", type=positive_int, default=None,
                help="synthetic-brent: use only the first N utterances of a split (default all)"),
         option("--trim", action="store_true",
                help="synthetic-brent: cut each file's leading and trailing silence to 5 frames (voice activity)"),
         option("--presegment", action="store_true",
                help="let a unit begin only at candidate boundaries of a spectral-change pre-segmentation (Lee and Glass 2012)"),
         option("--append", action="store_true",
                help="keep the runs already in OUT/units/results.json (one of the same corpus, algorithm and seed "
                     "is replaced) and add this command's"))),
}


def run_experiment(args):
    module = import_module(f"..experiments.{EXPERIMENTS[args.name].module}", __package__)
    module.EXPERIMENTS[args.name](args)
    emit(args, {"experiment": args.name, "results": args.out}, [f"results written under {args.out}"])


def register(commands):
    experiment = commands.add_parser(
        "experiment", help="re-run one of the thesis's experiments (tagging, text prediction, HDP-HMM, alignment, "
                           "trees, topics, word segmentation)",
        description="Each experiment writes results.json, table.md and PNG plots under --out and prints its "
                    "table beside the published numbers; 'cvbayes experiment NAME --help' lists its options.")
    names = experiment.add_subparsers(dest="name", required=True, metavar="NAME")
    for name, spec in EXPERIMENTS.items():
        parser = names.add_parser(name, help=spec.help, description=f"{spec.help[0].upper()}{spec.help[1:]}. "
                                                                    f"{spec.description}")
        parser.add_argument("--out", default="docs/results", help="results folder (default docs/results)")
        for flags, settings in spec.options:
            parser.add_argument(*flags, **settings)
        parser.add_argument("--quiet", action="store_true", help="no progress bars or per-run lines")
        if "--seed" not in parser._option_string_actions and "--seeds" in parser._option_string_actions:
            parser.add_argument(*FIRST_SEED.flags, **FIRST_SEED.settings)
        parser.set_defaults(handler=run_experiment)
