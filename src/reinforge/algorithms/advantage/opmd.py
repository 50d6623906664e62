"""Online Policy Mirror Descent advantage, as in Trinity-RFT's OPMD (Pan et al. 2025,
"Trinity-RFT: A General-Purpose and Unified Framework for Reinforcement Fine-Tuning").

For the rollouts of one task, the KL-regularised optimum of the mirror-descent step
has the soft value ``V = τ · log E[exp(r / τ)]``; the advantage is
``A_i = r_i − τ · log( (1/n) Σ_j exp(r_j / τ) )``. As ``τ → ∞`` the baseline tends
to the group mean; as ``τ → 0`` to the group max. A group of one gets exactly 0.
``baseline="mean"`` uses the plain group mean instead (Trinity-RFT's other option).
``returns`` hold the raw reward.
"""

from __future__ import annotations

import math
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

BASELINES = ("logavgexp", "mean")


@ADVANTAGE_FNS.register_module("opmd")
def opmd_advantage(
    exps: Sequence[Experience], tau: float = 1.0, baseline: str = "logavgexp"
) -> dict[str, float]:
    """Set OPMD advantages on ``exps`` in place; return reward/advantage metrics."""
    if tau <= 0:
        raise ValueError(f"tau must be positive, got {tau}")
    if baseline not in BASELINES:
        raise ValueError(f"unknown baseline '{baseline}'; use one of {', '.join(BASELINES)}")
    rewards = torch.tensor([outcome_reward(e) for e in exps], dtype=torch.float64)
    advantages = torch.zeros_like(rewards)
    groups = group_indices(exps)
    for idx in groups:
        group = rewards[idx]
        if baseline == "mean":
            b = group.mean()
        else:
            b = tau * (torch.logsumexp(group / tau, dim=0) - math.log(len(idx)))
        advantages[idx] = group - b
    advantages = advantages.to(torch.float32)
    for exp, adv, rew in zip(exps, advantages.tolist(), rewards.tolist(), strict=True):
        set_outcome_advantage(exp, adv, rew)
    return {
        **summary(REWARD, rewards.to(torch.float32)),
        **summary(ADVANTAGE, advantages),
        GROUP_COUNT: float(len(groups)),
    }
