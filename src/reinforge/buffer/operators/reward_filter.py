"""``reward_filter``: keep only experiences whose reward reaches a threshold."""

from __future__ import annotations

from reinforge.buffer.operators.base import ExperienceOperatorV1, OperatorResult
from reinforge.buffer.operators.registry import EXPERIENCE_OPERATORS
from reinforge.buffer.operators.reward_utils import valid_reward
from reinforge.core import Experience
from reinforge.core.explore_metric_names import dropped_metric

NAME = "reward_filter"


@EXPERIENCE_OPERATORS.register_module(NAME)
class RewardFilter(ExperienceOperatorV1):
    """Keeps experiences with ``reward >= threshold``.

    Useful for rejection-sampling style training (keep only successes). Experiences
    with a missing, NaN or infinite reward never pass.
    """

    def __init__(self, threshold: float = 0.0) -> None:
        self.threshold = float(threshold)

    async def process(self, exps: list[Experience]) -> OperatorResult:
        kept = [e for e in exps if (r := valid_reward(e)) is not None and r >= self.threshold]
        return kept, {
            f"{NAME}/kept": float(len(kept)),
            dropped_metric(NAME): float(len(exps) - len(kept)),
        }
