"""Supervised fine-tuning loss: negative log-likelihood of the masked tokens.

For warm starts before RL (and SFT-only runs). Shares the policy-loss signature so
presets can swap it in; ``old_logprobs`` and ``advantages`` are ignored.
"""

from __future__ import annotations

import torch

from reinforge.algorithms.aggregate import aggregate_loss
from reinforge.algorithms.registry import POLICY_LOSS_FNS
from reinforge.core.metric_names import SFT_LOSS


@POLICY_LOSS_FNS.register_module("sft")
def sft_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor | None,
    advantages: torch.Tensor | None,
    mask: torch.Tensor,
    *,
    loss_agg_mode: str = "token-mean",
    loss_agg_horizon: int | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """``aggregate(−log π_θ(y_t))`` over the masked tokens."""
    loss = aggregate_loss(-logprobs, mask, loss_agg_mode, loss_agg_horizon)
    return loss, {SFT_LOSS: float(loss.detach())}
