"""GRPO's group-relative advantage (Shao et al. 2024, DeepSeekMath), and Dr. GRPO's variant.

For the rollouts ``i`` of one task (same ``eid.tid``):
``A_i = (r_i − mean(r)) / (std(r) + eps)``, broadcast over the response's action
tokens. ``std_normalize=False`` drops the division (Dr. GRPO, Liu et al. 2025), which
removes the up-weighting of nearly-solved / nearly-failed tasks. The std is the
Bessel-corrected one (as in verl and Trinity-RFT). A group of one rollout gets 0.
``returns`` hold the raw reward. The metric ``group/flat_fraction`` is the share of
groups with no reward spread (single-rollout groups included): they contribute zero
advantage, and are what DAPO's dynamic sampling filters out.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from reinforge.algorithms.advantage.common import (
    group_indices,
    group_normalise,
    outcome_reward,
    set_outcome_advantage,
    summary,
)
from reinforge.algorithms.registry import ADVANTAGE_FNS
from reinforge.core import Experience
from reinforge.core.metric_names import ADVANTAGE, GROUP_COUNT, GROUP_FLAT_FRACTION, REWARD


@ADVANTAGE_FNS.register_module("grpo")
def grpo_advantage(
    exps: Sequence[Experience], epsilon: float = 1e-6, std_normalize: bool = True
) -> dict[str, float]:
    """Set GRPO advantages on ``exps`` in place; return reward/advantage metrics."""
    rewards = torch.tensor([outcome_reward(e) for e in exps], dtype=torch.float32)
    advantages = torch.zeros_like(rewards)
    groups = group_indices(exps)
    flat_groups = 0
    for idx in groups:
        normed, flat = group_normalise(rewards[idx], epsilon, std_normalize)
        advantages[idx] = normed
        flat_groups += int(flat)
    for exp, adv, rew in zip(exps, advantages.tolist(), rewards.tolist(), strict=True):
        set_outcome_advantage(exp, adv, rew)
    return {
        **summary(REWARD, rewards),
        **summary(ADVANTAGE, advantages),
        GROUP_COUNT: float(len(groups)),
        GROUP_FLAT_FRACTION: flat_groups / max(len(groups), 1),
    }
