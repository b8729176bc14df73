"""The ``cvbayes`` subcommands of the larger models, each adding its parser to `cvbayes.cli.build_parser`."""
