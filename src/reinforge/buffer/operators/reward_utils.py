"""Small helpers the built-in operators share: valid rewards and task groups."""

from __future__ import annotations

import math
from collections.abc import Iterable

from reinforge.core import Experience


def valid_reward(exp: Experience) -> float | None:
    """``exp.reward`` as a float, or ``None`` if it is missing, non-numeric, NaN or inf."""
    try:
        value = float(exp.reward)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def groups_by_task(exps: Iterable[Experience]) -> dict[str, list[Experience]]:
    """Experiences grouped by ``eid.tid`` (rollouts of one task), first-seen order."""
    return Experience.group_by(exps, "task")
