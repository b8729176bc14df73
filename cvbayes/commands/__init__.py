"""The ``cvbayes`` command line: one module a command.

Each module named in `COMMANDS` defines ``register(commands)``, which adds its subcommand (or a few
related ones) to argparse's subparsers ``commands`` and sets ``handler`` to the function that runs it
(``parser.set_defaults(handler=run_...)``).  `cvbayes.cli.build_parser` registers them in the order of
`COMMANDS`, which is the order of ``cvbayes --help``.  Options several commands share (--seed, --json,
--quiet, the corpus arguments, --checkpoint) live in `options`.

A new command is one new module here and its name in `COMMANDS`.
"""

COMMANDS = ("fit", "tag", "evaluate", "states", "compare", "demo", "lda", "align", "dmv", "pcfg", "segment",
            "units", "discover", "experiment", "data")
