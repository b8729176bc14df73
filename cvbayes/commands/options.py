"""Options and checks that several ``cvbayes`` commands share, each written once."""
import argparse
import contextlib
import json
import os
import sys

from ..checkpoints import Checkpoint, checkpoint_passes

COMMON_HELP = {
    "--seed": "random seed; this command has no randomness, so it has no effect (accepted on every command)",
    "--quiet": "no progress bars; this command shows none (accepted on every command)",
    "--json": "print the summary as machine-readable JSON (on standard error when standard output "
              "carries the command's data)",
}


def bounded(convert, low, below=None):
    """An argparse type: a number (``convert``: int or float) of at least ``low`` and, if given, below
    ``below``, checked before any work starts."""
    def check(text):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {'an integer' if convert is int else 'a number'}, "
                                             f"got {text!r}") from None
        if value < low or (below is not None and not value < below):
            raise argparse.ArgumentTypeError(f"must be at least {low}" + ("" if below is None else f" and below "
                                                                          f"{below}") + f", got {text}")
        return value
    return check


positive_int = bounded(int, 1)
count = bounded(int, 0)
fraction = bounded(float, 0, 1)


def add_common(parser, seed=True):
    """--seed (unless ``seed`` is False), --json and --quiet with their usual meanings."""
    if seed:
        parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON instead of text")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def leaf_parsers(parser):
    """Every parser under ``parser`` that runs a command (argparse keeps subparsers in a private field)."""
    children = [action.choices for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    if not children:
        yield parser
    for choices in children:
        for child in dict.fromkeys(choices.values()):
            yield from leaf_parsers(child)


def add_missing_common(parser):
    """Give every command --seed, --quiet and --json, with one meaning everywhere (README: "The command line")."""
    for leaf in leaf_parsers(parser):
        for option, help_text in COMMON_HELP.items():
            if option not in leaf._option_string_actions:
                kind = {"type": int, "default": 0} if option == "--seed" else {"action": "store_true"}
                leaf.add_argument(option, help=help_text, **kind)


def add_checkpoint_arguments(parser):
    """``--checkpoint PATH`` and ``--checkpoint-every N`` on a command that fits a model."""
    parser.add_argument("--checkpoint", metavar="PATH", default=None,
                        help="save the run's state to PATH as it trains; the same command again resumes from it "
                             "and ends exactly as an uninterrupted run; removed once the model is written")
    parser.add_argument("--checkpoint-every", metavar="N", type=positive_int, default=1,
                        help="passes between checkpoints (default 1)")


def announce_resume(path, n_iter, command, quiet):
    """Say on standard error that a run resumes from the checkpoint at ``path``, if there is one."""
    saved = checkpoint_passes(path)
    if saved is not None and not quiet:
        print(f"{command}: resuming from {path} after pass {saved[0]} of {n_iter}", file=sys.stderr)


def remove_checkpoint(path, report, lines):
    """Once the model file is written the checkpoint at ``path`` (if any) has done its work: remove it, and
    say how large it was, so that the next run knows what a checkpoint of this size of data costs (a
    collapsed learner keeps every unit's expected counts: cvi2 an HMM's K x K a sentence and K a token)."""
    if path is None or not os.path.exists(path):
        return
    report["checkpoint_bytes"] = os.path.getsize(path)
    lines.append(f"checkpoint {path} ({report['checkpoint_bytes'] / 1e6:.1f} MB) removed")
    Checkpoint(path).remove()


def finish_fit(args, report, removed, summary, written):
    """A fitting command's last words: the JSON ``report`` under --json, else the checkpoints ``removed`` and the
    files ``written`` on standard error and its ``summary`` on standard output."""
    if args.json:
        print(json.dumps(report))
        return
    for line in removed:
        print(line, file=sys.stderr)
    print(summary)
    print(written, file=sys.stderr)


def check_writable(path):
    """Refuse an output path that cannot be written, before any training (``-`` is standard output)."""
    if path in (None, "-"):
        return
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ValueError(f"{path}: is a folder, not an output file")
    if not os.path.isdir(folder):
        raise ValueError(f"{path}: cannot write there, the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise ValueError(f"{path}: cannot write there, permission denied")


def emit(args, report, lines):
    """Print a report as JSON (--json) or as the given text lines."""
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print("\n".join(lines))


# -- the HMM tagger's commands (fit, tag, evaluate, compare) --------------------------------------------

def saved_model_command(commands, name, handler, **settings):
    """The parser of a command that reads a model saved by 'cvbayes fit' and a corpus (tag, evaluate),
    with --json and --quiet (no --seed: neither draws anything), run by ``handler``."""
    parser = commands.add_parser(name, **settings)
    parser.add_argument("model", help="model file written by 'cvbayes fit'")
    add_corpus(parser)
    add_common(parser, seed=False)
    parser.set_defaults(handler=handler)
    return parser


def add_corpus(parser, tagset=True):
    """The corpus argument, --format and (unless ``tagset`` is False) --tagset."""
    from ..tagging import FORMATS

    parser.add_argument("corpus", help="'brown' (fetched with 'cvbayes data fetch brown'), 'brown-embedded' "
                                       "(the 2,000-sentence slice shipped with cvbayes) or a file")
    parser.add_argument("--format", choices=FORMATS, default="auto",
                        help="file format: word/TAG lines, CoNLL-U or plain text (default auto: .conllu by name, "
                             "else guessed from the first lines)")
    parser.add_argument("--tag", choices=("upos", "xpos"), default="upos",
                        help="CoNLL-U: the column of the gold tags (default upos)")
    if tagset:
        parser.add_argument("--tagset", choices=("brown", "universal"), default="brown",
                            help="tag set for the Brown corpus: 104 base tags or the 12 universal tags")


def add_priors(parser, hdp_beta=None):
    """--alpha and --beta, None unless given: each HMM learner's default (`DEFAULT_PRIORS`), which the help
    lists; ``hdp_beta``, the HDP-HMM's emission prior, where the command fits one too."""
    from ..models.hmm import DEFAULT_PRIORS, DICTIONARY_PRIORS

    table = ", ".join(f"{name} {alpha:g}/{beta:g}" for name, (alpha, beta) in DEFAULT_PRIORS.items())
    chosen = (f"default: the learner's own alpha/beta, chosen on EWT dev and Brown dev by 'cvbayes experiment "
              f"defaults': {table}; with a tag dictionary {DICTIONARY_PRIORS[0]:g}/{DICTIONARY_PRIORS[1]:g}")
    parser.add_argument("--alpha", type=float, default=None, help=f"Dirichlet prior on transitions ({chosen})")
    parser.add_argument("--beta", type=float, default=None,
                        help="Dirichlet prior on emissions (default: the learner's own, as --alpha says"
                             + (f"; hdp-hmm {hdp_beta:g})" if hdp_beta is not None else ")"))


def hmm_algorithms(text, command):
    """Comma-separated HMM algorithms, each checked."""
    from ..models.hmm import ALGORITHMS

    algorithms = text.split(",")
    for algorithm in algorithms:
        if algorithm not in ALGORITHMS:
            raise SystemExit(f"cvbayes {command}: unknown algorithm {algorithm!r}; "
                             f"choose from {', '.join(ALGORITHMS)}")
    return algorithms


# seconds to wait for the Dask scheduler of --scheduler
CONNECT_TIMEOUT = 10


def add_cluster_arguments(parser, algorithms):
    """--scheduler and --workers: the learners ``algorithms`` (text) on Dask workers, one shard each."""
    cluster = parser.add_mutually_exclusive_group()
    cluster.add_argument("--scheduler", metavar="ADDRESS", default=None,
                         help=f"run {algorithms} on the workers of this Dask scheduler (tcp://host:8786), one "
                              f"shard of the corpus per worker (needs cvbayes[distributed])")
    cluster.add_argument("--workers", type=positive_int, default=None, metavar="N",
                         help="the same on a local Dask cluster of N worker processes")


def cluster_requested(args, algorithms, command):
    """Whether --scheduler or --workers was given; refused before any work unless --algorithm is one of
    ``algorithms`` (those that run on shards)."""
    sharded = args.scheduler is not None or args.workers is not None
    if sharded and args.algorithm not in algorithms:
        raise SystemExit(f"{command}: --scheduler and --workers take --algorithm {', '.join(algorithms)}")
    return sharded


@contextlib.contextmanager
def connect(scheduler, workers, command):
    """A Dask client for ``--scheduler ADDRESS`` (an existing cluster) or ``--workers N`` (a local cluster
    of N processes sharing the cores); None (no Dask) without either.  Errors name ``command``."""
    if scheduler is None and workers is None:
        yield None
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise SystemExit('--scheduler and --workers need Dask: pip install "cvbayes[distributed]"') from None
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except ValueError as error:
            raise SystemExit(f"{command}: --scheduler {scheduler}: not a scheduler address ({error}); "
                             f"give tcp://HOST:PORT") from None
        except OSError as error:
            raise SystemExit(f"{command}: --scheduler {scheduler}: no Dask scheduler answered within "
                             f"{CONNECT_TIMEOUT} s ({error})") from None
        except Exception as error:                              # something answered, but not Dask
            raise SystemExit(f"{command}: --scheduler {scheduler}: what answered is not a Dask scheduler "
                             f"({type(error).__name__}: {error})") from None
        with client:
            yield client
        return
    threads = max(1, (os.cpu_count() or 1) // workers)
    with LocalCluster(n_workers=workers, threads_per_worker=threads, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        yield client
