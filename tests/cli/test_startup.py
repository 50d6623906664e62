"""Start-up of the ``reinforge`` command: help loads no heavy library, so it is fast.

Each check runs in a fresh interpreter, as a user's shell would start it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers", "ray", "sqlalchemy", "vllm", "openai", "datasets", "numpy")

# import the CLI, show a help page, report which heavy libraries got imported
PROBE = """
import json, sys
from reinforge.cli.main import app
try:
    app({args!r}, standalone_mode=False)
except SystemExit:
    pass
heavy = {heavy!r}
print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""


def _loaded_by(args: list[str]) -> list[str]:
    code = PROBE.format(args=args, heavy=HEAVY)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["explore", "--help"],
        ["run", "--help"],
        ["eval", "--help"],
        ["serve", "--help"],
        ["config", "--help"],
        ["init", "--help"],
        ["export", "--help"],
        ["doctor", "--help"],
        ["migrate", "--help"],
        ["--version"],
    ],
    ids=lambda a: " ".join(a),
)
def test_help_imports_no_heavy_library(args: list[str]) -> None:
    assert _loaded_by(args) == []


def test_help_runs_as_a_user_runs_it() -> None:
    """`reinforge --help` as a shell starts it: usage printed, exit 0. Its speed is what
    ``test_help_imports_no_heavy_library`` holds (tests never assert on wall time)."""
    env = {**os.environ, "COLUMNS": "120"}
    proc = subprocess.run(
        [sys.executable, "-m", "reinforge.cli.main", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Usage" in proc.stdout and "run" in proc.stdout
