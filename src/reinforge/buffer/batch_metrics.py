"""One step's pipeline metrics from the metrics of the several batches it explored.

Under dynamic sampling a step passes each batch through the experience pipeline on
its own (a judge never scores a rollout twice), so each batch reports its own
metrics. Operators report counts (kept, dropped, groups) and a few statistics; a
key's last name part says which: ``min`` and ``max`` combine as such, ``mean``,
``avg``, ``std``, ``rate``, ``ratio`` and ``fraction`` are averaged over the batches
that reported them, and everything else is a count and is summed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_AVERAGED = {"mean", "avg", "std", "rate", "ratio", "fraction"}


def _kind(key: str) -> str:
    words = set(re.split(r"[/_]", key.rsplit("/", 1)[-1]))
    if "min" in words:
        return "min"
    if "max" in words:
        return "max"
    return "mean" if words & _AVERAGED else "sum"


def combine_batch_metrics(batches: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The metrics of one step made of ``batches`` (each a pipeline's metrics)."""
    values: dict[str, list[float]] = {}
    for metrics in batches:
        for key, value in metrics.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                values.setdefault(key, []).append(float(value))
    combined = {}
    for key, seen in values.items():
        kind = _kind(key)
        if kind == "min":
            combined[key] = min(seen)
        elif kind == "max":
            combined[key] = max(seen)
        elif kind == "mean":
            combined[key] = sum(seen) / len(seen)
        else:
            combined[key] = sum(seen)
    return combined
