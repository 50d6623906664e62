"""``invalid_reward_filter``: drop experiences whose reward is unusable."""

from __future__ import annotations

import math

from reinforge.buffer.operators.base import ExperienceOperatorV1, OperatorResult
from reinforge.buffer.operators.registry import EXPERIENCE_OPERATORS
from reinforge.core import Experience
from reinforge.core.explore_metric_names import dropped_metric

NAME = "invalid_reward_filter"


def _invalid_kind(reward: object) -> str | None:
    """Why ``reward`` is unusable (``none``, ``nan``, ``inf``, ``non_numeric``), or ``None``."""
    if reward is None:
        return "none"
    try:
        value = float(reward)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "non_numeric"
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf"
    return None


@EXPERIENCE_OPERATORS.register_module(NAME)
class InvalidRewardFilter(ExperienceOperatorV1):
    """Drops experiences with a ``None``, NaN, infinite or non-numeric reward.

    A reward function that crashed or timed out leaves such rewards behind; one NaN
    would poison a whole group's advantages, so put this filter first. Counts per
    cause are reported (``invalid_reward_filter/nan`` ...), plus the total ``dropped``.
    """

    async def process(self, exps: list[Experience]) -> OperatorResult:
        counts = {"none": 0, "nan": 0, "inf": 0, "non_numeric": 0}
        kept: list[Experience] = []
        for exp in exps:
            kind = _invalid_kind(exp.reward)
            if kind is None:
                kept.append(exp)
            else:
                counts[kind] += 1
        metrics = {f"{NAME}/{kind}": float(n) for kind, n in counts.items()}
        metrics[dropped_metric(NAME)] = float(len(exps) - len(kept))
        metrics[f"{NAME}/kept"] = float(len(kept))
        return kept, metrics
