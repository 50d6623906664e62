"""``reward_std_filter``: drop task groups whose rewards do not vary."""

from __future__ import annotations

import statistics

from reinforge.buffer.operators.base import ExperienceOperatorV1, OperatorResult
from reinforge.buffer.operators.registry import EXPERIENCE_OPERATORS
from reinforge.buffer.operators.reward_utils import groups_by_task, valid_reward
from reinforge.core import Experience
from reinforge.core.explore_metric_names import dropped_metric

NAME = "reward_std_filter"


@EXPERIENCE_OPERATORS.register_module(NAME)
class RewardStdFilter(ExperienceOperatorV1):
    """Drops every group (same ``eid.tid``) whose reward std is ``<= threshold``.

    With group-relative advantages (GRPO and kin) a group whose rollouts all got the
    same reward has zero advantage everywhere: it costs a training step and teaches
    nothing. This is DAPO's dynamic-sampling filter. The std is the population one
    (``ddof=0``) over the group's valid rewards (missing/NaN/inf ignored); a group
    with fewer than two valid rewards counts as std 0 and is dropped at the default
    threshold. Surviving experiences keep their original order.

    ``per_run: true`` is for step-wise workflows (one experience per step): each run
    (``eid.run``) counts once, by its last step's reward, its outcome. That is what
    ``step_wise_grpo``, ``multi_step_grpo`` and GiGPO's episode level compare; by
    experience, a group of runs that all won in different numbers of steps (earlier
    steps 0, last 1) would be kept though its outcome advantages are all 0.
    """

    def __init__(self, threshold: float = 0.0, per_run: bool = False) -> None:
        self.threshold = float(threshold)
        if self.threshold < 0:
            raise ValueError(f"threshold must be >= 0, got {threshold}")
        if not isinstance(per_run, bool):
            raise ValueError(f"per_run must be true or false, got {per_run!r}")
        self.per_run = per_run

    async def process(self, exps: list[Experience]) -> OperatorResult:
        groups = groups_by_task(exps)
        dropped_tids = {tid for tid, group in groups.items() if self._std(group) <= self.threshold}
        kept = [e for e in exps if e.eid.tid not in dropped_tids]
        return kept, {
            f"{NAME}/groups": float(len(groups)),
            f"{NAME}/dropped_groups": float(len(dropped_tids)),
            f"{NAME}/kept": float(len(kept)),
            dropped_metric(NAME): float(len(exps) - len(kept)),
        }

    def _std(self, group: list[Experience]) -> float:
        if self.per_run:  # each run's last step (the later one where steps tie)
            runs = Experience.group_by(group, "run").values()
            group = [sorted(run, key=lambda e: e.eid.step)[-1] for run in runs]
        rewards = [r for e in group if (r := valid_reward(e)) is not None]
        return statistics.pstdev(rewards) if len(rewards) >= 2 else 0.0
