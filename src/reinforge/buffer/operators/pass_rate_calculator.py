"""``pass_rate_calculator``: per-task success rate, attached to every rollout of the task."""

from __future__ import annotations

import math
from statistics import fmean

from reinforge.buffer.operators.base import ExperienceOperatorV1, OperatorResult
from reinforge.buffer.operators.registry import EXPERIENCE_OPERATORS
from reinforge.buffer.operators.reward_utils import groups_by_task, valid_reward
from reinforge.core import Experience

NAME = "pass_rate_calculator"


@EXPERIENCE_OPERATORS.register_module(NAME)
class PassRateCalculator(ExperienceOperatorV1):
    """Sets ``exp.info["pass_rate"]`` to the fraction of its group that passed.

    A rollout passes when its score is ``>= threshold``; the score is the reward, or
    ``exp.metrics[metric]`` when ``metric`` is given (e.g. ``"accuracy"``). Missing,
    NaN or infinite scores count as failures. Pass rates tell how hard a task is for
    the current policy (curriculum, difficulty-based sampling); the batch itself is
    returned unchanged. Metrics: mean pass rate over groups, and the share of groups
    that all passed / all failed (no learning signal for group-relative methods).
    """

    def __init__(self, threshold: float = 1.0, metric: str | None = None) -> None:
        self.threshold = float(threshold)
        self.metric = metric

    def _passed(self, exp: Experience) -> bool:
        if self.metric is None:
            score = valid_reward(exp)
        else:
            raw = exp.metrics.get(self.metric)
            score = float(raw) if raw is not None and math.isfinite(float(raw)) else None
        return score is not None and score >= self.threshold

    async def process(self, exps: list[Experience]) -> OperatorResult:
        rates: list[float] = []
        for group in groups_by_task(exps).values():
            rate = sum(self._passed(e) for e in group) / len(group)
            rates.append(rate)
            for exp in group:
                exp.info["pass_rate"] = rate
        if not rates:
            return exps, {}
        return exps, {
            f"{NAME}/mean": fmean(rates),
            f"{NAME}/all_pass_fraction": sum(r == 1.0 for r in rates) / len(rates),
            f"{NAME}/all_fail_fraction": sum(r == 0.0 for r in rates) / len(rates),
        }
