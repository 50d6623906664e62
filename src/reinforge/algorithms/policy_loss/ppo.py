"""PPO's clipped surrogate (Schulman et al. 2017) with two common extensions.

* **Clip-higher** (DAPO, Yu et al. 2025): separate ``clip_range_low`` and
  ``clip_range_high``, i.e. the ratio is clipped to ``[1 − low, 1 + high]``; a larger
  upper bound lets low-probability tokens grow, which fights entropy collapse.
* **Dual-clip** (Ye et al. 2020, "Mastering Complex Control in MOBA Games"): for
  negative advantages the loss is additionally capped at ``−A · clip_ratio_c``, so a
  huge ratio on a bad token cannot produce an unbounded update. ``None`` disables it.

Per token: ``L = max(−A·r, −A·clip(r, 1−low, 1+high))``; for ``A < 0``:
``L = min(L, −A·c)``. Aggregated with ``aggregate_loss(loss_agg_mode)``.
"""

from __future__ import annotations

import torch

from reinforge.algorithms.aggregate import aggregate_loss
from reinforge.algorithms.policy_loss.common import fraction, ratio_metrics, token_log_ratio
from reinforge.algorithms.registry import POLICY_LOSS_FNS
from reinforge.core.metric_names import POLICY_CLIP_FRAC, POLICY_DUAL_CLIP_FRAC, POLICY_LOSS


@POLICY_LOSS_FNS.register_module("ppo")
def ppo_policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_range_low: float = 0.2,
    clip_range_high: float = 0.2,
    clip_ratio_c: float | None = 3.0,
    loss_agg_mode: str = "token-mean",
    loss_agg_horizon: int | None = None,
    token_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped-surrogate loss over ``[B, T]`` tensors; ``mask`` selects trained tokens.
    ``token_weights`` (detached, e.g. the sampler correction's) scale each token's term."""
    if clip_ratio_c is not None and clip_ratio_c <= 1.0:
        raise ValueError(f"clip_ratio_c must be > 1 (or None), got {clip_ratio_c}")
    log_ratio = token_log_ratio(logprobs, old_logprobs)
    ratio = log_ratio.exp()
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1.0 - clip_range_low, 1.0 + clip_range_high)
    loss_mat = torch.maximum(unclipped, clipped)
    clip_active = clipped > unclipped
    dual_active = torch.zeros_like(clip_active)
    if clip_ratio_c is not None:
        cap = -advantages * clip_ratio_c
        negative = advantages < 0
        dual_active = negative & (cap < loss_mat)
        loss_mat = torch.where(negative, torch.minimum(loss_mat, cap), loss_mat)
    if token_weights is not None:
        loss_mat = loss_mat * token_weights
    loss = aggregate_loss(loss_mat, mask, loss_agg_mode, loss_agg_horizon)
    metrics = {
        POLICY_LOSS: float(loss.detach()),
        POLICY_CLIP_FRAC: fraction(clip_active, mask),
        POLICY_DUAL_CLIP_FRAC: fraction(dual_active, mask),
        **ratio_metrics(log_ratio, mask),
    }
    return loss, metrics
