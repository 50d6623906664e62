"""Trinity-RFT's OPMD policy loss (Pan et al. 2025, "Trinity-RFT", Appendix A; inspired
by Kimi k1.5's online mirror descent).

OPMD is derived for off-policy data, so it uses no importance ratio: per token
``L = −A · log π_θ(y_t) / (1 + τ)``, with ``A`` from the ``opmd`` advantage and the
same temperature ``τ``. As in Trinity-RFT, the ``1/(1+τ)`` scaling accounts for the
mirror-descent step's KL regularisation w.r.t. the current policy.
``old_logprobs`` is ignored.
"""

from __future__ import annotations

import torch

from reinforge.algorithms.aggregate import aggregate_loss
from reinforge.algorithms.registry import POLICY_LOSS_FNS
from reinforge.core.metric_names import POLICY_LOSS


@POLICY_LOSS_FNS.register_module("opmd")
def opmd_policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor | None,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    tau: float = 1.0,
    loss_agg_mode: str = "token-mean",
    loss_agg_horizon: int | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """``aggregate(−A · log π_θ) / (1 + τ)`` over ``[B, T]`` tensors."""
    if tau <= 0:
        raise ValueError(f"tau must be positive, got {tau}")
    loss = aggregate_loss(-advantages * logprobs, mask, loss_agg_mode, loss_agg_horizon)
    loss = loss / (1.0 + tau)
    return loss, {POLICY_LOSS: float(loss.detach())}
