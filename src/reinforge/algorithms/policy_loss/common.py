"""Importance ratios between the current policy and the rollout policy, and their metrics."""

from __future__ import annotations

import torch

from reinforge.algorithms.masked import masked_mean
from reinforge.core.metric_names import POLICY_APPROX_KL_K1, POLICY_APPROX_KL_K3, POLICY_RATIO_MEAN

# exp(±20) is far outside any clip range; clamping keeps exp() finite on stale tokens.
LOG_RATIO_CLAMP = 20.0


def token_log_ratio(logprobs: torch.Tensor, old_logprobs: torch.Tensor) -> torch.Tensor:
    """``log π_θ(y_t) − log π_old(y_t)``, clamped to ±20 for numerical safety."""
    return (logprobs - old_logprobs).clamp(min=-LOG_RATIO_CLAMP, max=LOG_RATIO_CLAMP)


def ratio_metrics(log_ratio: torch.Tensor, mask: torch.Tensor) -> dict[str, float]:
    """Approximate KL(π_old‖π_θ) on the rollout tokens (k1 and k3) and the mean ratio.

    With ``r = π_θ/π_old`` and tokens drawn from ``π_old``: ``k1 = −log r``,
    ``k3 = (r − 1) − log r`` (Schulman 2020).
    """
    lr = log_ratio.detach()
    ratio = lr.exp()
    return {
        POLICY_APPROX_KL_K1: float(masked_mean(-lr, mask)),
        POLICY_APPROX_KL_K3: float(masked_mean(ratio - 1.0 - lr, mask)),
        POLICY_RATIO_MEAN: float(masked_mean(ratio, mask)),
    }


def fraction(flags: torch.Tensor, mask: torch.Tensor) -> float:
    """Share of masked entries where ``flags`` is true."""
    return float(masked_mean(flags.to(torch.float32), mask))
