"""``cvbayes units``: discover acoustic units in speech, and decode utterances into them.

``cvbayes units AUDIO_DIR_OR_LIST -o units.npz`` fits `cvbayes.AcousticUnits`; ``cvbayes units decode
units.npz AUDIO...`` writes every utterance's units with their times.  `register` adds both to the
``cvbayes`` parser (`cvbayes.cli.build_parser`); `route` turns ``units decode`` into the decoding
parser's name before parsing (argparse has no default subcommand).

Files
-----
* **Input**: a folder (searched recursively), a list file (one path a line, relative to the list's
  folder, ``#`` starting a comment), or files, of ``.npy`` arrays (T, D) taken as they are, and of
  ``.wav``, ``.raw`` and Sphinx ``.mfc`` files, which `utterance_features` reads through the speech front
  end (`cvbayes.speech.features`: MFCC + delta + delta-delta, 39 dimensions, normalised over the
  utterance; its ``[speech]`` extra).
* **Output of decode**: one line an utterance: its name, then for every unit its number, start and end
  in seconds, tab-separated groups (``man.ah.111a<TAB>12 0.00 0.13<TAB>3 0.13 0.27``); ``--json`` gives a
  list of {"utterance", "units", "starts", "ends"} with the times in seconds.
"""
import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from ..data.errors import CorpusFormatError
from ..files import write_text
from ..models.units import ALGORITHMS, DEFAULT_UNITS, AcousticUnits
from .options import add_checkpoint_arguments, announce_resume, finish_fit, positive_int, remove_checkpoint

# features are computed every 10 ms (the speech front end's and Sphinx's frame shift)
FRAME_SECONDS = 0.01
SUFFIXES = (".npy", ".mfc", ".wav", ".raw")
LIST_SUFFIXES = (".txt", ".lst", ".list", ".scp")
DECODE = "units-decode"

EPILOG = """\
examples:
  cvbayes units /usr/share/pocketsphinx/test/data/tidigits -o tidigits-units.npz --units 30
  cvbayes units decode tidigits-units.npz /usr/share/pocketsphinx/test/data/tidigits > units.txt
  cvbayes units features.lst --algorithm cvi --iterations 20 --checkpoint run.ckpt -o units.npz --json
"""


def route(argv):
    """``units decode ...`` -> the decoding parser's name (argparse has no default subcommand)."""
    if len(argv) >= 2 and argv[0] == "units" and argv[1] == "decode":
        return [DECODE, *argv[2:]]
    return argv


def utterance_features(path):
    """The feature frames (T, D) of one file: the single place where audio comes in.

    ``.npy`` arrays are taken as they are; audio and Sphinx ``.mfc`` files go through the speech front end
    (`cvbayes.speech.features`: MFCC + delta + delta-delta, normalised over the utterance).
    """
    path = Path(path)
    if path.suffix.lower() == ".npy":
        try:
            frames = np.load(path, allow_pickle=False)
        except ValueError as error:
            raise CorpusFormatError(f"not a NumPy array file ({error})", path) from None
        if frames.ndim != 2 or frames.dtype.kind != "f" or frames.shape[0] == 0:
            raise CorpusFormatError(f"expected a non-empty (frames, dimensions) float array, got {frames.dtype} "
                                    f"{frames.shape}", path)
        if not np.isfinite(frames).all():
            raise CorpusFormatError("holds NaN or infinite values", path)
        return np.asarray(frames, dtype=np.float64)
    from .. import speech

    try:
        return speech.features(path)
    except ImportError as error:
        raise CorpusFormatError(str(error), path) from None


def input_files(sources):
    """The feature or audio files of folders, list files and files, in the order given (folders sorted)."""
    files = []
    for source in map(Path, sources):
        if source.is_dir():
            found = sorted(p for p in source.rglob("*") if p.suffix.lower() in SUFFIXES and p.is_file())
            if not found:
                raise CorpusFormatError(f"no {', '.join(SUFFIXES)} files in this folder", source)
            files += found
        elif source.suffix.lower() in LIST_SUFFIXES:
            listed = []
            for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), start=1):
                line = line.split("#", 1)[0].strip()
                if not line:
                    continue
                path = Path(line) if Path(line).is_absolute() else source.parent / line
                if not path.is_file():
                    raise CorpusFormatError(f"no such file: {line}", source, number)
                listed.append(path)
            if not listed:
                raise CorpusFormatError("lists no files", source)
            files += listed
        elif source.is_file():
            files.append(source)
        else:
            raise FileNotFoundError(f"{source} does not exist")
    return files


def read_inputs(sources, quiet):
    """(names, feature arrays) of the inputs, every utterance with the same number of dimensions."""
    from tqdm.auto import tqdm

    files = input_files(sources)
    features = [utterance_features(path) for path in tqdm(files, desc="features", unit="file", disable=quiet)]
    dims = {frames.shape[1] for frames in features}
    if len(dims) > 1:
        first = next(f for f, frames in zip(files, features) if frames.shape[1] != features[0].shape[1])
        raise CorpusFormatError(f"has {dims - {features[0].shape[1]}} dimensions a frame, {files[0]} has "
                                f"{features[0].shape[1]}", first)
    return [path.stem for path in files], features


def run_units_fit(args):
    names, features = read_inputs(args.inputs, args.quiet or args.json)
    model = AcousticUnits(n_units=args.units, n_states=args.states, n_components=args.components,
                          algorithm=args.algorithm, n_iter=args.iterations, gamma=args.gamma,
                          batch_size=args.batch_size, presegment=args.presegment, random_state=args.seed)
    short = [name for name, frames in zip(names, features) if frames.shape[0] < args.states]
    if short:
        raise ValueError(f"utterance {short[0]} has fewer frames than the {args.states} states of a unit")
    announce_resume(args.checkpoint, model.n_iter or ALGORITHMS[args.algorithm].default_iterations,
                    "cvbayes units", args.quiet or args.json)
    started = time.perf_counter()
    model.fit(features, progress=not (args.quiet or args.json), checkpoint=args.checkpoint,
              checkpoint_every=args.checkpoint_every)
    n_frames = sum(frames.shape[0] for frames in features)
    seconds = [record.seconds for record in model.history_]
    report = {"utterances": len(features), "frames": n_frames, "dimensions": int(features[0].shape[1]),
              "audio_seconds": round(n_frames * FRAME_SECONDS, 2), "algorithm": args.algorithm,
              "units": args.units, "states": args.states, "components": args.components, "presegment": args.presegment,
              "iterations": model.n_iter_, "seconds": round(time.perf_counter() - started, 3),
              "seconds_per_pass": round(float(np.median(seconds)), 4),
              "objective": model.history_[-1].objective, "objective_is": model.objective_name_,
              "units_used": int(model.n_units_used_)}
    model.save(args.output)
    report["model"] = args.output
    removed = []
    remove_checkpoint(args.checkpoint, report, removed)  # the model is safely written
    finish_fit(args, report, removed,
               f"{report['utterances']} utterances, {n_frames} frames ({report['audio_seconds']} s of audio, "
               f"{report['dimensions']} dimensions); {args.algorithm}, {model.n_iter_} passes, median "
               f"{report['seconds_per_pass']} s a pass; {report['units_used']} of {args.units} units hold 99% of "
               f"the frames", f"model written to {args.output}")


def decoded_lines(names, segments):
    """The text format of the module notes, one line an utterance."""
    lines = []
    for name, decoded in zip(names, segments):
        groups = [f"{unit} {start * FRAME_SECONDS:.2f} {end * FRAME_SECONDS:.2f}"
                  for unit, start, end in zip(decoded.units, decoded.starts, decoded.ends)]
        lines.append("\t".join([name, *groups]))
    return lines


def run_units_decode(args):
    model = AcousticUnits.load(args.model)
    names, features = read_inputs(args.inputs, args.quiet or args.json)
    segments = model.decode(features)
    if args.json:
        text = json.dumps([{"utterance": name, "units": decoded.units.tolist(),
                            "starts": [round(s * FRAME_SECONDS, 2) for s in decoded.starts.tolist()],
                            "ends": [round(e * FRAME_SECONDS, 2) for e in decoded.ends.tolist()]}
                           for name, decoded in zip(names, segments)]) + "\n"
    else:
        text = "".join(line + "\n" for line in decoded_lines(names, segments))
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        write_text(args.output, text)


def add_speech_inputs(parser):
    """The inputs and ``-o`` of a command that fits a model to speech (`read_inputs` reads them)."""
    parser.add_argument("inputs", nargs="+", metavar="AUDIO_DIR_OR_LIST",
                        help="folders, list files (.txt, .lst, .scp) or files of .npy features, .mfc, .wav or .raw")
    parser.add_argument("-o", "--output", required=True, help="write the model here (.npz)")


def register(commands):
    """Add ``cvbayes units`` (fit) and ``cvbayes units decode`` to the ``cvbayes`` subcommands."""
    fit = commands.add_parser(
        "units", help="acoustic unit discovery: fit units to speech (cvbayes units decode: decode with them)",
        description="Fit a Dirichlet process over acoustic units, each a left-to-right HMM with Gaussian-mixture "
                    "emissions (Lee and Glass 2012; Ondel et al. 2016), to utterances, and save it. "
                    "'cvbayes units decode MODEL AUDIO...' writes each utterance's units with their times.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_speech_inputs(fit)
    fit.add_argument("--algorithm", choices=tuple(ALGORITHMS), default="vb", help="learner (default vb)")
    fit.add_argument("--units", type=positive_int, default=DEFAULT_UNITS,
                     help=f"truncation of the units' Dirichlet process (default {DEFAULT_UNITS})")
    fit.add_argument("--states", type=positive_int, default=3,
                     help="states of every unit's left-to-right HMM (default 3)")
    fit.add_argument("--components", type=positive_int, default=2,
                     help="Gaussians of every state's mixture (default 2)")
    fit.add_argument("--iterations", type=positive_int, default=None,
                     help="passes (sweeps for gibbs); default 40 for vb and cvi, 200 for gibbs, 20 for svi, scvi")
    fit.add_argument("--gamma", type=float, default=1.0, help="concentration of the units' Dirichlet process (1)")
    fit.add_argument("--batch-size", type=positive_int, default=32,
                     help="svi, scvi: utterances a minibatch (default 32)")
    fit.add_argument("--presegment", action="store_true",
                     help="let a unit begin only at candidate boundaries of a spectral-change pre-segmentation (Lee and Glass 2012) on the first 13 dimensions (the static cepstra)")
    fit.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    fit.add_argument("--json", action="store_true", help="print a machine-readable JSON report")
    fit.add_argument("--quiet", action="store_true", help="no progress bars")
    add_checkpoint_arguments(fit)
    fit.set_defaults(handler=run_units_fit)

    decode = commands.add_parser(DECODE, prog="cvbayes units decode",
                                 description="Decode utterances into the units of a fitted model: the most probable "
                                             "segmentation of each (Viterbi).")
    decode.add_argument("model", help="a model written by 'cvbayes units -o'")
    decode.add_argument("inputs", nargs="+", metavar="AUDIO", help="folders, list files or files, as for fitting")
    decode.add_argument("-o", "--output", default=None, help="write here instead of standard output")
    decode.add_argument("--json", action="store_true", help="JSON instead of the text format")
    decode.add_argument("--quiet", action="store_true", help="no progress bars")
    decode.set_defaults(handler=run_units_decode)
    return fit
