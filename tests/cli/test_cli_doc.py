"""docs/cli.md's command table lists every command ``reinforge --help`` shows, and no other."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from reinforge.cli.main import app

CLI_DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_the_command_table_lists_every_command() -> None:
    commands = set(typer.main.get_command(app).commands)
    text = CLI_DOC.read_text()
    table = text[text.index("| command | what it does |") :].split("\n\n", 1)[0]
    listed = set(re.findall(r"^\| \[`([a-z-]+)", table, flags=re.M))
    assert listed == commands
