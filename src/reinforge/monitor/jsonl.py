"""Append metrics as one JSON object per line (``RUN_DIR/metrics.jsonl``)."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from reinforge.core.metric_names import TRAIN_PREFIX

logger = logging.getLogger(__name__)


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """The JSON objects of ``path``, one per line; lines that do not parse are skipped.

    A process killed while appending can leave a torn last line; everything before
    it (and everything a resumed run appends after it) is still read.
    """
    rows: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                logger.warning("%s:%d is not valid JSON; skipped", path, number)
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows


def _private(path: Path) -> None:
    """Create ``path`` if missing; either way only its owner may read it (0600):
    metrics carry prompts' statistics and run names, the run dir is the owner's."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    path.chmod(0o600)


class JsonlMetrics:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _private(self.path)
        self._end_torn_line()

    def _end_torn_line(self) -> None:
        """Terminate a last line left without its newline, so new lines stay separate."""
        if not self.path.is_file() or self.path.stat().st_size == 0:
            return
        with open(self.path, "rb+") as fh:
            fh.seek(-1, 2)
            if fh.read(1) != b"\n":
                fh.write(b"\n")

    def log(self, metrics: dict[str, Any]) -> None:
        line = json.dumps({"time": time.time(), **metrics}) + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)  # one write per line: concurrent appenders do not interleave

    def rewind(self, explore_step: int, train_step: int) -> list[dict[str, Any]]:
        """Drop the rows a resumed run will write again, so each step is logged once:
        rows after ``explore_step``, and training rows after ``train_step``. Returns
        the rows kept (other sinks replay some of them, see ``TensorBoardSink``)."""
        if not self.path.is_file():
            return []
        keep = [
            row
            for row in read_jsonl(self.path)
            if int(row.get("step", 0)) <= explore_step
            and not (
                int(row.get("step", 0)) > train_step
                and any(k.startswith(TRAIN_PREFIX) for k in row)
            )
        ]
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.unlink(missing_ok=True)
        _private(tmp)
        tmp.write_text("".join(json.dumps(row) + "\n" for row in keep), encoding="utf-8")
        tmp.replace(self.path)
        return keep

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return read_jsonl(self.path)

    def close(self) -> None:
        """Nothing to release: every line is written and closed at once."""
