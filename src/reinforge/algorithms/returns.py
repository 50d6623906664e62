"""Discounted reward-to-go ``G_t = r_t + γ G_{t+1}`` over padded token rows."""

from __future__ import annotations

import torch


def discounted_returns(rewards: torch.Tensor, mask: torch.Tensor, gamma: float) -> torch.Tensor:
    """Reward-to-go along the last dim of ``rewards`` ``[B, T]``, counting only masked steps.

    Unmasked positions (padding, or tool/user tokens of a multi-turn response) are
    not time steps: they add no reward, are not discounted over, and get 0.
    """
    valid = mask.bool()
    out = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[..., 0])
    for t in reversed(range(rewards.shape[-1])):
        stepped = rewards[..., t] + gamma * running
        running = torch.where(valid[..., t], stepped, running)
        out[..., t] = torch.where(valid[..., t], running, torch.zeros_like(running))
    return out
