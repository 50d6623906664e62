"""Trinity-RFT's ``importance_sampling`` policy loss: the plain importance-weighted
policy gradient, with no clipping.

Per token ``L = −A · r`` with ``r = exp(log π_θ − log π_old)`` (the log-ratio clamped to
±20, as everywhere here); aggregated with ``aggregate_loss(loss_agg_mode)``. Trinity
offers it for on-policy distillation, whose per-token advantages (teacher − student
log-probs) need no trust region when every step samples afresh; the
``on_policy_distill`` preset keeps PPO's clipped loss, as Trinity's does.
"""

from __future__ import annotations

import torch

from reinforge.algorithms.aggregate import aggregate_loss
from reinforge.algorithms.policy_loss.common import ratio_metrics, token_log_ratio
from reinforge.algorithms.registry import POLICY_LOSS_FNS
from reinforge.core.metric_names import POLICY_LOSS


@POLICY_LOSS_FNS.register_module("importance_sampling")
def importance_sampling_policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    loss_agg_mode: str = "token-mean",
    loss_agg_horizon: int | None = None,
    token_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """``aggregate(−A · π_θ/π_old)`` over ``[B, T]`` tensors; ``mask`` selects trained
    tokens, ``token_weights`` (detached, the sampler correction's) scale each term."""
    log_ratio = token_log_ratio(logprobs, old_logprobs)
    loss_mat = -advantages * log_ratio.exp()
    if token_weights is not None:
        loss_mat = loss_mat * token_weights
    loss = aggregate_loss(loss_mat, mask, loss_agg_mode, loss_agg_horizon)
    return loss, {POLICY_LOSS: float(loss.detach()), **ratio_metrics(log_ratio, mask)}
