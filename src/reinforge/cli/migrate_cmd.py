"""``reinforge migrate PATH``: point a file's or folder's Trinity-RFT / rLLM imports at reinforge."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated

import typer

from reinforge.cli.import_rewriter import (
    RewriteError,
    python_files,
    rewrite_source,
    sibling_modules,
)


def migrate(
    path: Annotated[Path, typer.Argument(help="A .py file or a folder (every *.py under it).")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print a diff; change no file.")
    ] = False,
) -> None:
    """Rewrite ``trinity.`` / ``rllm.`` imports to ``reinforge.trinity.`` / ``reinforge.rllm.``.

    Only import statements change. Each import that cannot be mapped is listed as
    FILE:LINE and the command exits with status 1: an import of a module reinforge has
    no counterpart for is left as it was; one naming something the counterpart does
    not export is rewritten all the same (its other names map). An upstream module
    with no counterpart whose file was copied beside the importing one (its helpers'
    ``utils.py``, say) is imported from there, relatively. A failure of the command
    itself on a file is reported as FILE:LINE, that file is left as it was, the other
    files are still migrated, and the exit status is 2.
    """
    if not path.exists():
        typer.echo(f"error: {path} does not exist", err=True)
        raise typer.Exit(2)
    changed = unmapped = failed = 0
    for file in python_files(path):
        try:
            text = file.read_text(encoding="utf-8")
            result = rewrite_source(text, sibling_modules(file))
        except (UnicodeDecodeError, SyntaxError) as exc:
            typer.echo(f"{file}: skipped, cannot be read as Python: {exc}", err=True)
            continue
        except RewriteError as exc:
            failed += 1
            typer.echo(
                f"{file}:{exc.line}: error: reinforge migrate failed on this import and left "
                f"the file unchanged ({exc.message}); please report it",
                err=True,
            )
            continue
        except Exception as exc:  # never a traceback: name the file and go on
            failed += 1
            typer.echo(
                f"{file}:1: error: reinforge migrate failed on this file and left it unchanged "
                f"({type(exc).__name__}: {exc}); please report it",
                err=True,
            )
            continue
        for item in result.unmapped:
            typer.echo(f"{file}:{item.line}: cannot map '{item.module}': {item.reason}", err=True)
        for line, module, local in result.to_siblings:
            typer.echo(f"{file}:{line}: '{module}' -> '{local}' (the file beside it)", err=True)
        unmapped += len(result.unmapped)
        if not result.changed:
            continue
        changed += 1
        if dry_run:
            diff = difflib.unified_diff(
                result.old.splitlines(keepends=True),
                result.new.splitlines(keepends=True),
                fromfile=str(file),
                tofile=str(file),
            )
            typer.echo("".join(diff), nl=False)
        else:
            try:
                file.write_text(result.new, encoding="utf-8")
            except OSError as exc:
                failed += 1
                typer.echo(f"{file}:1: error: cannot write the migrated file: {exc}", err=True)
    verb = "would change" if dry_run else "changed"
    typer.echo(f"{verb} {changed} file(s); {unmapped} import(s) could not be mapped", err=True)
    if failed:
        typer.echo(f"error: {failed} file(s) could not be migrated (see above)", err=True)
        raise typer.Exit(2)
    if unmapped:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the command of this module to ``app``."""
    app.command()(migrate)
