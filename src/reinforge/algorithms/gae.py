"""Generalised Advantage Estimation (Schulman et al. 2016, "High-Dimensional Continuous
Control Using Generalized Advantage Estimation").

PPO proper (Schulman et al. 2017) needs a learned value function ``V``. The trainer
provides no critic yet, so there is deliberately **no** ``ppo`` entry in
``ADVANTAGE_FNS``: this pure function is the piece a future critic-based preset
will call with the critic's per-token values.
"""

from __future__ import annotations

import torch


def compute_gae(
    token_rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    gamma: float = 1.0,
    lam: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE advantages and value targets for ``[B, T]`` token rewards and values.

    ``δ_t = r_t + γ V_{t+1} − V_t`` and ``A_t = δ_t + γλ A_{t+1}``, where ``t+1`` is the
    next *masked* position (tool/user tokens of multi-turn responses and padding are
    skipped, not treated as steps) and the value after the last step is 0.
    ``returns = A + V``. Both outputs are 0 at unmasked positions and carry no
    gradient; whitening the advantages is left to the caller.
    """
    with torch.no_grad():
        valid = mask.bool()
        advantages = torch.zeros_like(token_rewards)
        next_value = torch.zeros_like(token_rewards[:, 0])
        next_adv = torch.zeros_like(token_rewards[:, 0])
        for t in reversed(range(token_rewards.shape[1])):
            delta = token_rewards[:, t] + gamma * next_value - values[:, t]
            adv_t = delta + gamma * lam * next_adv
            next_adv = torch.where(valid[:, t], adv_t, next_adv)
            next_value = torch.where(valid[:, t], values[:, t], next_value)
            advantages[:, t] = torch.where(valid[:, t], adv_t, torch.zeros_like(adv_t))
        returns = torch.where(valid, advantages + values, torch.zeros_like(values))
    return advantages, returns
