"""What the bench scripts share to drive ``reinforge run``: its command line and the
rows it logs. (A sibling module: ``python bench/<script>.py`` puts bench/ first on
``sys.path``.)"""

from __future__ import annotations

import json
from pathlib import Path


def run_args(
    config: Path | str, run_dir: Path, overrides: list[str], command: str = "run"
) -> list[str]:
    """``reinforge COMMAND -c CONFIG --run-dir RUN_DIR --set ...`` (without the program)."""
    args = [command, "-c", str(config), "--run-dir", str(run_dir)]
    for item in overrides:
        args += ["--set", item]
    return args


def metric_rows(run_dir: Path) -> list[dict]:
    """The rows of the run's metrics.jsonl, in order."""
    text = (run_dir / "metrics.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line]
