"""Group Sequence Policy Optimization (Zheng et al. 2025, "Group Sequence Policy
Optimization", Qwen team), token-level form "GSPO-token".

The importance ratio is per *sequence*, the geometric mean of its token ratios:
``s_i = exp( mean_t log(π_θ(y_t)/π_old(y_t)) )`` over the response's action tokens.
It is clipped per sequence (the paper uses very small ranges, e.g. 3e-4 / 4e-4).
To let advantages vary per token, the paper's token ratio is
``s_{i,t} = sg[s_i] · π_θ(y_t) / sg[π_θ(y_t)]``: numerically equal to ``s_i``, with
gradient ``s_i ∇ log π_θ(y_t)``. With ``seq-mean-token-mean`` aggregation and a
per-sequence advantage this is exactly the gradient of the sequence-level objective.
"""

from __future__ import annotations

import torch

from reinforge.algorithms.aggregate import aggregate_loss
from reinforge.algorithms.masked import masked_mean
from reinforge.algorithms.policy_loss.common import fraction, ratio_metrics, token_log_ratio
from reinforge.algorithms.registry import POLICY_LOSS_FNS
from reinforge.core.metric_names import POLICY_CLIP_FRAC, POLICY_LOSS, POLICY_SEQ_RATIO_MEAN

# Cap on log s_i: a sequence ratio above e^10 is a stale batch, not a signal.
SEQ_LOG_RATIO_MAX = 10.0


@POLICY_LOSS_FNS.register_module("gspo")
def gspo_policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_range_low: float = 3e-4,
    clip_range_high: float = 4e-4,
    loss_agg_mode: str = "seq-mean-token-mean",
    loss_agg_horizon: int | None = None,
    token_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """GSPO-token clipped surrogate over ``[B, T]`` tensors; ``token_weights`` (detached)
    scale each token's term."""
    log_ratio = token_log_ratio(logprobs, old_logprobs)
    seq_log_ratio = masked_mean(log_ratio, mask, dim=-1).clamp(max=SEQ_LOG_RATIO_MAX)
    tok_log_ratio = seq_log_ratio.detach().unsqueeze(-1) + logprobs - logprobs.detach()
    ratio = tok_log_ratio.exp()
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1.0 - clip_range_low, 1.0 + clip_range_high)
    loss_mat = torch.maximum(unclipped, clipped)
    if token_weights is not None:
        loss_mat = loss_mat * token_weights
    loss = aggregate_loss(loss_mat, mask, loss_agg_mode, loss_agg_horizon)
    has_tokens = mask.bool().any(dim=-1)
    seq_ratio = seq_log_ratio.detach().exp()
    metrics = {
        POLICY_LOSS: float(loss.detach()),
        POLICY_CLIP_FRAC: fraction(clipped > unclipped, mask),
        POLICY_SEQ_RATIO_MEAN: float(masked_mean(seq_ratio, has_tokens)),
        **ratio_metrics(log_ratio, mask),
    }
    return loss, metrics
