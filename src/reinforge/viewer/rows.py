"""Small JSON-ready summaries of stored experiences and task records.

The step view lists every experience of a step with a few fields (reward, run,
termination and mask reasons, a response preview) and filters on them. Those
fields live inside each experience's blob, so a step is decoded once and its
summaries kept (``StepCache``): a step's experiences are written in one
transaction, so their row count tells whether a cached step is still current.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from reinforge.core import Experience

PREVIEW_CHARS = 160


def finite(value: Any, digits: int = 4) -> float | None:
    """A float fit for JSON (NaN and infinities become None), rounded for the page."""
    if value is None:
        return None
    number = float(value)
    return round(number, digits) if math.isfinite(number) else None


def floats(values: Any) -> list[float | None] | None:
    """A per-token tensor as a JSON list, or None when the field is not set."""
    if values is None:
        return None
    return [finite(v) for v in values.tolist()]


def is_masked(info: dict[str, Any]) -> bool:
    """Kept out of training: a ``mask_reason`` (judges) or an episode's ``masked`` flag."""
    return bool(info.get("mask_reason") or info.get("masked"))


def mean_advantage(exp: Experience) -> float | None:
    """Mean advantage over the tokens the model sampled (None without advantages)."""
    if exp.advantages is None:
        return None
    mask = exp.action_mask
    picked = exp.advantages[mask] if mask is not None and bool(mask.any()) else exp.advantages
    return finite(picked.mean()) if len(picked) else None


def experience_row(row_id: int, exp: Experience) -> dict[str, Any]:
    """What the step list shows of one experience."""
    info = exp.info or {}
    text = exp.response_text or ""
    return {
        "id": row_id,
        "uid": exp.eid.uid,
        "task": str(exp.eid.task),
        "run": int(exp.eid.run),
        "turn_step": int(exp.eid.step),
        "reward": finite(exp.reward),
        "taskset": info.get("taskset"),
        "model_version": info.get("model_version"),
        "termination_reason": info.get("termination_reason"),
        "mask_reason": info.get("mask_reason") or ("masked" if info.get("masked") else None),
        "masked": is_masked(info),
        "response_length": int(exp.response_length),
        "turns": sum(1 for m in exp.messages or [] if m.get("role") == "assistant") or 1,
        "advantage": mean_advantage(exp),
        "preview": text[:PREVIEW_CHARS] + ("…" if len(text) > PREVIEW_CHARS else ""),
    }


@dataclass
class _Cached:
    count: int
    rows: list[dict[str, Any]]


class StepCache:
    """Experience summaries per batch, rebuilt when the batch's row count changes."""

    def __init__(self, capacity: int = 32) -> None:
        self.capacity = capacity
        self._steps: dict[str, _Cached] = {}
        self._lock = threading.Lock()

    def get(
        self,
        batch: str,
        count: int,
        load: Callable[[], Iterable[tuple[int, bytes]]],
    ) -> list[dict[str, Any]]:
        with self._lock:
            hit = self._steps.get(batch)
            if hit is not None and hit.count == count:
                return hit.rows
        rows = [experience_row(row_id, Experience.from_bytes(blob)) for row_id, blob in load()]
        with self._lock:
            if len(self._steps) >= self.capacity:
                self._steps.pop(next(iter(self._steps)))
            self._steps[batch] = _Cached(count, rows)
        return rows
