"""REINFORCE Leave-One-Out (Kool et al. 2019; Ahmadian et al. 2024, "Back to Basics").

Each rollout's baseline is the mean reward of the *other* rollouts of the same task:
``A_i = r_i − mean_{j≠i} r_j = n/(n−1) · (r_i − mean(r))``. The baseline does not
depend on ``r_i``, so the estimator stays unbiased. A group of one gets 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from reinforge.algorithms.advantage.common import (
    group_indices,
    outcome_reward,
    set_outcome_advantage,
    summary,
)
from reinforge.algorithms.registry import ADVANTAGE_FNS
from reinforge.core import Experience
from reinforge.core.metric_names import ADVANTAGE, GROUP_COUNT, REWARD


@ADVANTAGE_FNS.register_module("rloo")
def rloo_advantage(exps: Sequence[Experience]) -> dict[str, float]:
    """Set RLOO advantages on ``exps`` in place; return reward/advantage metrics."""
    rewards = torch.tensor([outcome_reward(e) for e in exps], dtype=torch.float32)
    advantages = torch.zeros_like(rewards)
    groups = group_indices(exps)
    for idx in groups:
        n = len(idx)
        if n < 2:
            continue
        group = rewards[idx]
        others_mean = (group.sum() - group) / (n - 1)
        advantages[idx] = group - others_mean
    for exp, adv, rew in zip(exps, advantages.tolist(), rewards.tolist(), strict=True):
        set_outcome_advantage(exp, adv, rew)
    return {
        **summary(REWARD, rewards),
        **summary(ADVANTAGE, advantages),
        GROUP_COUNT: float(len(groups)),
    }
