"""The ``reinforge`` command: the app, its global options, and the list of commands.

Start-up stays light: this module and the command modules import only typer and
rich, so ``reinforge --help`` answers at once. Each command imports the machinery
it needs (the config schema, torch, engines, the buffer) when it runs.
"""

from __future__ import annotations

import logging
from importlib import metadata
from typing import Annotated

import typer

from reinforge.cli import (
    config_cmd,
    doctor_cmd,
    init_cmd,
    migrate_cmd,
    runs,
    serve_cmd,
    tools,
    view_cmd,
)
from reinforge.cli.common import fail_message, state

app = typer.Typer(
    help="reinforge: reinforcement fine-tuning of LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"


def package_version() -> str:
    """The installed reinforge's version (from the package metadata)."""
    try:
        return metadata.version("reinforge")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"reinforge {package_version()}")
        raise typer.Exit()


def log_level(verbose: int, quiet: bool, level: str | None) -> int | None:
    """The level for the ``reinforge`` logger, or None to leave it alone.

    ``--log-level`` wins; otherwise -v is INFO, -vv DEBUG and -q ERROR. Without any of
    them the logger keeps its default (WARNING, inherited from the root logger).
    """
    if level is not None:
        name = level.upper()
        if name not in LOG_LEVELS:
            raise fail_message(f"--log-level must be one of {', '.join(LOG_LEVELS)}, not '{level}'")
        return int(getattr(logging, name))
    if verbose and quiet:
        raise fail_message("-v/--verbose and -q/--quiet contradict each other; give one")
    if quiet:
        return logging.ERROR
    if verbose:
        return logging.DEBUG if verbose > 1 else logging.INFO
    return None


@app.callback()
def _options(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the traceback of errors reported in one line.")
    ] = False,
    verbose: Annotated[
        int,
        typer.Option(
            "--verbose",
            "-v",
            count=True,
            help="Log more: -v info, -vv debug (reinforge's loggers).",
            show_default=False,
        ),
    ] = 0,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Log errors only (reinforge's loggers).")
    ] = False,
    level: Annotated[
        str | None,
        typer.Option(
            "--log-level",
            metavar="LEVEL",
            help="Level of reinforge's loggers: DEBUG, INFO, WARNING, ERROR or CRITICAL.",
            show_default=False,
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_print_version,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    state.debug = debug
    state.verbose = verbose
    chosen = log_level(verbose, quiet, level)
    if chosen is not None:
        logging.basicConfig(level=logging.WARNING, format=LOG_FORMAT)  # no-op if set up
        logging.getLogger("reinforge").setLevel(chosen)


runs.register(app)
tools.register(app)
serve_cmd.register(app)
config_cmd.register(app)
init_cmd.register(app)
view_cmd.register(app)
migrate_cmd.register(app)
doctor_cmd.register(app)


def main() -> None:
    """Entry point of the ``reinforge`` script."""
    logging.basicConfig(level=logging.WARNING, format=LOG_FORMAT)
    state.standalone = True
    app()


if __name__ == "__main__":
    main()
