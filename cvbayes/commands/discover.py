"""``cvbayes discover``: discover the words of a spoken corpus, with their times and their lexicon.

``cvbayes discover AUDIO_DIR_OR_LIST -o model.npz`` fits `cvbayes.models.discovery.LexiconDiscovery`
(acoustic units, then the unigram adaptor grammar through a noisy channel with ``--joint-rounds`` rounds in which
the words re-estimate the units, hard or, with ``--joint nbest``, both layers together over candidate readings
of the units (vb: one ELBO; cvi: collapsed); or the grammar alone) and writes three files:

* the model (``-o``, ``.npz``);
* the discovered word tokens in the ZeroSpeech class format (``--classes``; ``<model>.classes`` by default):
  a ``Class N`` line a word type, numbered from 1 by frequency, then one ``UTTERANCE START END`` line a
  token (seconds, at the frame boundaries of its edges), a blank line after each class;
  `cvbayes.metrics.tde.read_classes` reads it back, and the ZeroSpeech evaluator (``zerospeech-tde``) scores it;
* the lexicon (``--lexicon``; ``<model>.lexicon.tsv`` by default): one line a word type, tab-separated: its
  class number, its tokens and its unit string (unit numbers separated by spaces).

The inputs are read as by ``cvbayes units`` (`cvbayes.commands.units.read_inputs`): folders, list files or
files of ``.npy`` features, ``.mfc``, ``.wav`` or ``.raw``; an utterance's name is its file's stem.
"""
import argparse
import time
from pathlib import Path

from ..files import write_text
from ..metrics.tde import write_classes
from ..models.discovery import (GRAMMARS, JOINT_ROUNDS, JOINTS, LEARNERS, N_BEST, N_DRAWS, LexiconDiscovery,
                                word_classes)
from ..models.units import DEFAULT_UNITS
from .options import (add_checkpoint_arguments, add_cluster_arguments, check_writable, cluster_requested, connect,
                      count, finish_fit, positive_int, remove_checkpoint)
from .units import FRAME_SECONDS, add_speech_inputs, read_inputs

EPILOG = """\
examples:
  cvbayes discover /usr/share/pocketsphinx/test/data/tidigits -o digits.npz --units 30
  cvbayes discover wavs.lst -o words.npz --grammar colloc --classes words.classes
  cvbayes discover wavs.lst -o words.npz --no-channel --grammar colloc --algorithm vb
"""


def lexicon_text(model):
    return "".join(f"{k}\t{count}\t{' '.join(word)}\n" for k, (word, count) in enumerate(model.lexicon_.items(), 1))


def run_discover(args):
    stem = Path(args.output).with_suffix("")
    classes_path = args.classes or f"{stem}.classes"
    lexicon_path = args.lexicon or f"{stem}.lexicon.tsv"
    for path in (args.output, classes_path, lexicon_path):
        check_writable(path)
    quiet = args.quiet or args.json
    cluster_requested(args, ("vb",), "cvbayes discover")
    model = LexiconDiscovery(grammar=args.grammar, channel=args.channel, algorithm=args.algorithm,
                             n_units=args.units, presegment=args.presegment, joint_rounds=args.joint_rounds,
                             joint=args.joint, n_best=args.n_best, n_draws=args.draws,
                             unit_iter=args.unit_iterations, n_iter=args.iterations, random_state=args.seed)
    names, features = read_inputs(args.inputs, quiet)
    short = [name for name, frames in zip(names, features) if frames.shape[0] < 3]
    if short:
        raise ValueError(f"utterance {short[0]} has fewer frames than the 3 states of a unit")
    started = time.perf_counter()
    with connect(args.scheduler, args.workers, "cvbayes discover") as client:
        model.fit(features, client=client, progress=not quiet, checkpoint=args.checkpoint,
                  checkpoint_every=args.checkpoint_every)
    tokens = model.tokens_
    seconds = time.perf_counter() - started
    classes = word_classes(model.lexicon_, names, tokens)
    model.save(args.output)
    write_classes(classes_path, classes)
    write_text(lexicon_path, lexicon_text(model))
    n_frames = sum(frames.shape[0] for frames in features)
    report = {"utterances": len(features), "audio_seconds": round(n_frames * FRAME_SECONDS, 2),
              "algorithm": args.algorithm, "grammar": args.grammar, "channel": args.channel,
              "joint_rounds": args.joint_rounds, "joint": args.joint,
              "units_used": int(model.units_.n_units_used_), "word_types": len(model.lexicon_),
              "word_tokens": sum(len(t) for t in tokens), "seconds": round(seconds, 3),
              "model": args.output, "classes": classes_path, "lexicon": lexicon_path}
    removed = []
    for part in model.checkpoint_parts():  # the model is safely written
        remove_checkpoint(None if args.checkpoint is None else f"{args.checkpoint}.{part}", {}, removed)
    words = "unigram grammar through the noisy channel" if args.channel else f"{args.grammar} grammar"
    if args.joint_rounds:
        words += f", {args.joint_rounds} {args.joint} joint round{'s' if args.joint_rounds > 1 else ''}"
    finish_fit(args, report, removed,
               f"{report['utterances']} utterances ({report['audio_seconds']} s of audio): {report['units_used']} "
               f"units, {report['word_tokens']} word tokens of {report['word_types']} types ({args.algorithm}, "
               f"{words}) in {seconds:.0f} s",
               f"model written to {args.output}, classes to {classes_path}, lexicon to {lexicon_path}")


def register(commands):
    """Add ``cvbayes discover`` to the ``cvbayes`` subcommands."""
    parser = commands.add_parser(
        "discover", help="lexicon discovery from speech: acoustic units, then words over them",
        description="Discover the words of a spoken corpus: acoustic units (Lee and Glass 2012), then the unigram "
                    "adaptor grammar through a learned noisy channel over their 1-best strings (Lee, O'Donnell and "
                    "Glass 2015), then joint rounds in which the words' reading of the units re-estimates them; or "
                    "the grammar alone. Writes the model, the word tokens in the "
                    "ZeroSpeech class format and the lexicon.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_speech_inputs(parser)
    parser.add_argument("--classes", default=None, help="write the word tokens here (default <model>.classes)")
    parser.add_argument("--lexicon", default=None, help="write the lexicon here (default <model>.lexicon.tsv)")
    parser.add_argument("--grammar", choices=GRAMMARS, default="unigram",
                        help="the word layer's adaptor grammar (default unigram; colloc with the channel needs "
                             "--joint hard)")
    parser.add_argument("--no-channel", dest="channel", action="store_false",
                        help="no noisy channel: the grammar reads the unit strings as they are")
    parser.add_argument("--algorithm", choices=LEARNERS, default="cvi", help="every layer's learner (default cvi)")
    parser.add_argument("--joint-rounds", type=count, default=JOINT_ROUNDS,
                        help=f"with the channel: rounds in which the words' reading of the units re-estimates them and "
                             f"the words are fitted again (default {JOINT_ROUNDS}; 0: the pipeline)")
    parser.add_argument("--joint", choices=JOINTS, default="hard",
                        help="the joint rounds: hard (default), the words' best reading re-estimates the units; "
                             "nbest, both layers learned together over candidate readings of every utterance (vb: "
                             "coordinate ascent on one ELBO; cvi: its collapsed counterpart)")
    parser.add_argument("--n-best", type=positive_int, default=N_BEST,
                        help=f"--joint nbest: candidate readings an utterance, at most (default {N_BEST})")
    parser.add_argument("--draws", type=positive_int, default=N_DRAWS,
                        help=f"--joint nbest: paths drawn from the units' posterior for the candidates "
                             f"(default {N_DRAWS})")
    parser.add_argument("--units", type=positive_int, default=DEFAULT_UNITS,
                        help=f"truncation of the units' Dirichlet process (default {DEFAULT_UNITS})")
    parser.add_argument("--unit-iterations", type=positive_int, default=30, help="passes of the unit layer (30)")
    parser.add_argument("--iterations", type=positive_int, default=10, help="passes of the word layer (10)")
    parser.add_argument("--no-presegment", dest="presegment", action="store_false",
                        help="let units begin at any frame (by default only at spectral-change candidates, which "
                             "assumes the first 13 dimensions are static cepstra)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--json", action="store_true", help="print a machine-readable JSON report")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_checkpoint_arguments(parser)
    add_cluster_arguments(parser, "vb (every layer's E-steps)")
    parser.set_defaults(handler=run_discover)
    return parser
