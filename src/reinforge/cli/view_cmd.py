"""``reinforge view``: browse a run in a local web page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from reinforge.cli.common import fail


def view(
    run_dir: Annotated[
        Path, typer.Argument(help="Run directory (buffer.db, metrics.jsonl, config.json).")
    ],
    host: Annotated[
        str,
        typer.Option("--host", help="Address to bind; 127.0.0.1 keeps the page on this machine."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to serve on.")] = 8765,
    open_browser: Annotated[
        bool, typer.Option("--open/--no-open", help="Open the page in a browser.")
    ] = False,
) -> None:
    """Browse a run in a local web page: curves, steps, groups, experiences token by
    token, multi-turn tool calls, failed and masked tasks, step-by-step compare."""
    from reinforge.viewer import serve_viewer

    try:
        serve_viewer(run_dir, host=host, port=port, open_browser=open_browser)
    except (FileNotFoundError, ValueError, OSError) as exc:
        raise fail(exc) from None


def register(app: typer.Typer) -> None:
    app.command()(view)
