"""CISPO, Clipped IS-weight Policy Optimization (MiniMax 2025, "MiniMax-M1").

Instead of clipping the surrogate (which zeroes the gradient of clipped tokens,
often the rare "reflective" ones), CISPO clips the importance-sampling weight and
keeps every token's gradient: per token
``L = −sg[clip(r, 1 − eps_low, 1 + eps_high)] · A · log π_θ(y_t)``.
MiniMax-M1 effectively removes the lower bound (large ``eps_low``; the default 1.0
makes it ``0``, which a ratio never goes below) and tunes ``eps_high``.
"""

from __future__ import annotations

import torch

from reinforge.algorithms.aggregate import aggregate_loss
from reinforge.algorithms.policy_loss.common import fraction, ratio_metrics, token_log_ratio
from reinforge.algorithms.registry import POLICY_LOSS_FNS
from reinforge.core.metric_names import POLICY_CLIP_FRAC, POLICY_LOSS


@POLICY_LOSS_FNS.register_module("cispo")
def cispo_policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    eps_low: float = 1.0,
    eps_high: float = 0.28,
    loss_agg_mode: str = "token-mean",
    loss_agg_horizon: int | None = None,
    token_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """CISPO loss over ``[B, T]`` tensors (gradient flows only through ``logprobs``);
    ``token_weights`` (detached) scale each token's term."""
    log_ratio = token_log_ratio(logprobs, old_logprobs).detach()
    ratio = log_ratio.exp()
    weight = ratio.clamp(1.0 - eps_low, 1.0 + eps_high)
    loss_mat = -advantages * weight * logprobs
    if token_weights is not None:
        loss_mat = loss_mat * token_weights
    loss = aggregate_loss(loss_mat, mask, loss_agg_mode, loss_agg_horizon)
    metrics = {
        POLICY_LOSS: float(loss.detach()),
        POLICY_CLIP_FRAC: fraction(weight != ratio, mask),
        **ratio_metrics(log_ratio, mask),
    }
    return loss, metrics
