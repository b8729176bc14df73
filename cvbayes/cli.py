"""The ``cvbayes`` command: a thin layer over the library (one module a command in `cvbayes.commands`).

`main` parses the command line, runs the command's handler, and keeps the terminal plain: errors
that users cause are one line (``cvbayes COMMAND: ...``), library warnings are one line without a
source path, Ctrl-C says how to resume, and progress bars in a log file are lines, not carriage returns.
"""
import argparse
import os
import sys
import time
import warnings
from importlib import import_module

from . import __version__
from .commands import COMMANDS
from .commands.options import add_missing_common, check_writable, leaf_parsers
from .commands.units import route
from .data import CorpusFormatError


def build_parser():
    parser = argparse.ArgumentParser(
        prog="cvbayes",
        description="Collapsed variational inference for the models of computational linguistics.")
    parser.add_argument("--version", action="version", version=f"cvbayes {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        import_module(f".commands.{name}", __package__).register(commands)
    add_missing_common(parser)
    for leaf in leaf_parsers(parser):
        leaf.set_defaults(parser_=leaf)
    return parser


def parse(argv=None):
    """The parsed command line and the name of its command (``cvbayes lda fit``); an unknown option is
    refused with the usage of the command it was given to."""
    args, unknown = build_parser().parse_known_args(route(sys.argv[1:] if argv is None else list(argv)))
    leaf = args.parser_
    del args.parser_
    if unknown:
        leaf.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args, leaf.prog


class ProgressLog:
    """Standard error when it is not a terminal, or under --quiet: tqdm redraws its bar in place with
    carriage returns, which a log file keeps as one long line.  Here a redraw becomes a plain line: a
    bar's first, then at most one every ``every`` seconds, and the last it showed when it closes (none
    under ``quiet``); all other text passes through unchanged."""

    def __init__(self, stream, every=30.0, quiet=False):
        self.stream, self.every, self.quiet = stream, every, quiet
        self.last = None            # when the last line was written
        self.pending = None         # a redraw not written yet
        self.after_bar = False

    def write(self, text):
        if "\r" not in text and "\x1b[A" not in text:
            if not (self.after_bar and text == "\n"):      # the newline tqdm ends a kept bar with
                self.stream.write(text)
            self.after_bar = False
            return len(text)
        for status in text.replace("\x1b[A", "\r").split("\r"):
            if status.strip():
                self.pending = status.strip()
                if self.last is None or time.monotonic() - self.last >= self.every or "100%|" in status:
                    self._line()
        if not text.strip():                                # a bar cleared as it closes
            self._line()
        return len(text)

    def _line(self):
        if self.pending is not None and not self.quiet:
            self.stream.write(self.pending + "\n")
            self.last = time.monotonic()
            self.after_bar = True
        self.pending = None

    def __getattr__(self, name):                            # flush, encoding, fileno, isatty, ...
        return getattr(self.stream, name)


def _show_warning(command):
    def show(message, category, filename, lineno, file=None, line=None):
        print(f"{command}: warning: {message}", file=sys.stderr)
    return show


def _interrupted(args, command):
    """The line Ctrl-C leaves: where the run's checkpoint is, or how to make the next run resumable."""
    checkpoint = getattr(args, "checkpoint", None)
    if checkpoint and os.path.exists(checkpoint):
        return (f"{command}: interrupted; the checkpoint {checkpoint} holds the passes done so far: "
                f"run the same command again to resume")
    if hasattr(args, "checkpoint"):
        return f"{command}: interrupted; nothing saved (--checkpoint PATH makes a run resumable)"
    return f"{command}: interrupted"


def main(argv=None):
    args, command = parse(argv)
    stderr = sys.stderr
    if args.quiet or not stderr.isatty():
        sys.stderr = ProgressLog(stderr, quiet=args.quiet)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning(command)
            check_writable(getattr(args, "output", None))
            args.handler(args)
    except (CorpusFormatError, FileNotFoundError, ValueError) as error:
        raise SystemExit(f"{command}: {error}") from None
    except KeyboardInterrupt:
        print(("\n" if stderr.isatty() else "") + _interrupted(args, command), file=stderr)
        raise SystemExit(130) from None
    except BrokenPipeError:
        # the reader closed the pipe ('cvbayes ... | head'): stop quietly, as other Unix tools do; standard
        # output goes to /dev/null so that the interpreter's last flush does not raise again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(1) from None
    finally:
        sys.stderr = stderr


if __name__ == "__main__":
    main()
