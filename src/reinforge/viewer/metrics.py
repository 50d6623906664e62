"""Curves from ``metrics.jsonl``: one series of (step, value) per metric key.

A run writes several rows per step (an explore row, a train row, an eval row per
pass), each with only its own keys, so a series collects its key from every row
that has it. The page draws a few fixed charts: explore reward and accuracy,
eval accuracy per taskset, and the training loss when the run trained.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from reinforge.core.explore_metric_names import (
    ACCURACY,
    EVAL_PREFIX,
    EXPLORE_ACCURACY,
    EXPLORE_REWARD_MEAN,
    eval_metric,
)
from reinforge.core.metric_names import TRAIN_LOSS

Series = list[tuple[int, float]]


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file; lines that do not parse (a torn last line of a
    run that is still writing) are skipped. Own reader: importing ``reinforge.monitor``
    would load its console and plotting code, seconds of start-up for the viewer."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows


def read_series(path: Path) -> dict[str, Series]:
    """Every numeric key of every row, as points sorted by step (the last row wins)."""
    if not path.is_file():
        return {}
    points: dict[str, dict[int, float]] = {}
    for row in read_rows(path):
        step = row.get("step")
        if not isinstance(step, int | float):
            continue
        for key, value in row.items():
            if key in ("step", "time") or isinstance(value, bool):
                continue
            if isinstance(value, int | float) and math.isfinite(value):
                points.setdefault(key, {})[int(step)] = float(value)
    return {key: sorted(by_step.items()) for key, by_step in sorted(points.items())}


def _pick(series: dict[str, Series], keys: list[str]) -> list[dict[str, Any]]:
    return [{"name": key, "points": series[key]} for key in keys if key in series]


def charts(series: dict[str, Series]) -> list[dict[str, Any]]:
    """The charts the page draws: a title and its lines (charts without data left out)."""
    evals = sorted({key.split("/")[1] for key in series if key.startswith(EVAL_PREFIX)})
    out = [
        {
            "title": "Explore reward and accuracy",
            "lines": _pick(series, [EXPLORE_REWARD_MEAN, EXPLORE_ACCURACY]),
        },
        {
            "title": "Eval accuracy per taskset",
            "lines": _pick(series, [eval_metric(name, ACCURACY) for name in evals]),
        },
        {"title": "Training loss", "lines": _pick(series, [TRAIN_LOSS])},
    ]
    return [chart for chart in out if chart["lines"]]
