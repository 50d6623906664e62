"""Plain REINFORCE (Williams 1992) with an optional batch-mean baseline.

``A_i = r_i − b`` with ``b`` the mean reward of the whole batch (``baseline="mean"``)
or 0 (``baseline="none"``), broadcast over the response's action tokens. Groups are
ignored.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from reinforge.algorithms.advantage.common import outcome_reward, set_outcome_advantage, summary
from reinforge.algorithms.registry import ADVANTAGE_FNS
from reinforge.core import Experience
from reinforge.core.metric_names import ADVANTAGE, BASELINE_VALUE, REWARD

BASELINES = ("mean", "none")


@ADVANTAGE_FNS.register_module("reinforce")
def reinforce_advantage(exps: Sequence[Experience], baseline: str = "mean") -> dict[str, float]:
    """Set REINFORCE advantages on ``exps`` in place; return reward/advantage metrics."""
    if baseline not in BASELINES:
        raise ValueError(f"unknown baseline '{baseline}'; use one of {', '.join(BASELINES)}")
    rewards = torch.tensor([outcome_reward(e) for e in exps], dtype=torch.float32)
    b = rewards.mean() if baseline == "mean" and rewards.numel() else torch.zeros(())
    advantages = rewards - b
    for exp, adv, rew in zip(exps, advantages.tolist(), rewards.tolist(), strict=True):
        set_outcome_advantage(exp, adv, rew)
    return {
        **summary(REWARD, rewards),
        **summary(ADVANTAGE, advantages),
        BASELINE_VALUE: float(b),
    }
