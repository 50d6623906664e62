"""``reinforge init NAME``: write a starter project that runs as it is."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import typer

from reinforge.cli.common import fail_message
from reinforge.cli.templates import starter

N_TRAIN, N_TEST = 48, 16


def workflow_name(project: str) -> str:
    """The registry name of the starter workflow: the project's name as an identifier,
    so that two starter projects loaded in one process do not clash."""
    slug = re.sub(r"[^0-9a-zA-Z]+", "_", project).strip("_").lower() or "starter"
    return f"{slug}_arithmetic"


def starter_files(folder: Path) -> dict[str, str]:
    """Relative path -> text of every file the starter project in ``folder`` holds."""
    project = folder.resolve().name
    values = {
        "project": project,
        "project_yaml": json.dumps(project),  # a JSON string is a valid YAML scalar
        "folder": folder.as_posix(),
        "workflow": workflow_name(project),
        "n_train": str(N_TRAIN),
        "n_test": str(N_TEST),
    }
    return {
        "workflow.py": starter.WORKFLOW.substitute(values),
        "config.yaml": starter.CONFIG.substitute(values),
        "README.md": starter.README.substitute(values),
        "data/train.jsonl": starter.jsonl(starter.arithmetic_rows(N_TRAIN, seed=1)),
        "data/test.jsonl": starter.jsonl(starter.arithmetic_rows(N_TEST, seed=2)),
    }


def write_starter(folder: Path) -> list[Path]:
    """Write the starter project into ``folder`` (new, or an empty folder); returns the
    files written. Raises FileExistsError for a folder that already holds anything."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise FileExistsError(f"'{folder}' already exists and is not empty; pick a new name")
    written = []
    for relative, text in starter_files(folder).items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def init(
    name: Annotated[Path, typer.Argument(help="Folder to create (its name is the project's).")],
) -> None:
    """Write a starter project (workflow, config, data) into a new folder NAME.

    The workflow file is loaded through the config's `plugins:` key; the config runs
    it with the mock engine (one edit switches to the embedded SmolLM2-135M); the
    data is a small generated arithmetic set. A non-empty folder is left alone.
    """
    try:
        written = write_starter(name)
    except OSError as exc:
        raise fail_message(str(exc)) from None
    for path in written:
        typer.echo(f"wrote {path}")
    typer.echo(f"next: reinforge explore -c {(name / 'config.yaml').as_posix()}")


def register(app: typer.Typer) -> None:
    """Add ``init`` to ``app``."""
    app.command()(init)
