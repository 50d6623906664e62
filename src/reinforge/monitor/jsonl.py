"""Append metrics as one JSON object per line (``RUN_DIR/metrics.jsonl``)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any


class JsonlMetrics:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def log(self, metrics: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"time": time.time(), **metrics}) + "\n")

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        with open(self.path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]

    def close(self) -> None:
        """Nothing to release: every line is written and closed at once."""
