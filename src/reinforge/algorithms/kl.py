"""KL divergence between the policy and a frozen reference, per token.

Estimators of KL(π‖π_ref) from tokens sampled by π, after Schulman's note
"Approximating KL Divergence" (2020), with ``log r = ref_logprob − logprob``:

* ``k1``: ``−log r = logprob − ref_logprob``; unbiased, high variance, can be < 0.
* ``k2``: ``½ (log r)²``; biased but low variance, always ≥ 0. As a loss its
  gradient equals the gradient of the true KL in expectation.
* ``k3``: ``(r − 1) − log r``; unbiased and always ≥ 0.
* ``low_var_kl``: ``k3`` with ``log r`` clamped to [−20, 20] and the result to
  [−10, 10], as in verl, so a single badly-off token cannot blow up the loss.
* ``none``: zeros.

It is used in one of two places (both may be on at once):

* as a **reward penalty** (InstructGPT / REINFORCE++): ``apply_kl_reward_penalty``
  subtracts ``coef · kl`` from the per-token rewards before advantages are computed;
* as a **loss term** (GRPO, DeepSeekMath): ``kl_loss_term`` adds
  ``kl_loss_coef · aggregate(kl)`` to the policy loss.
"""

from __future__ import annotations

import torch

from reinforge.algorithms.aggregate import aggregate_loss
from reinforge.algorithms.masked import masked_mean
from reinforge.core.metric_names import (
    KL_LOSS_COEF,
    KL_LOSS_VALUE,
    KL_PENALTY_COEF,
    KL_PENALTY_MEAN,
)

KL_KINDS: tuple[str, ...] = ("none", "k1", "k2", "k3", "low_var_kl")


def check_kl_kind(kind: str) -> None:
    """Raise ``ValueError`` naming the valid kinds if ``kind`` is not one of them."""
    if kind not in KL_KINDS:
        raise ValueError(f"unknown KL kind '{kind}'; use one of {', '.join(KL_KINDS)}")


def kl_penalty(
    logprobs: torch.Tensor, ref_logprobs: torch.Tensor, kind: str = "low_var_kl"
) -> torch.Tensor:
    """Per-token KL estimate of the given ``kind``, same shape as ``logprobs``."""
    check_kl_kind(kind)
    if kind == "none":
        return torch.zeros_like(logprobs)
    diff = logprobs - ref_logprobs  # = -log r
    if kind == "k1":
        return diff
    if kind == "k2":
        return 0.5 * diff.square()
    log_r = -diff
    if kind == "low_var_kl":
        log_r = log_r.clamp(min=-20.0, max=20.0)
    k3 = torch.exp(log_r) - log_r - 1.0
    return k3.clamp(min=-10.0, max=10.0) if kind == "low_var_kl" else k3


def apply_kl_reward_penalty(
    token_rewards: torch.Tensor,
    logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor,
    mask: torch.Tensor,
    kind: str = "k1",
    coef: float = 0.0,
) -> tuple[torch.Tensor, dict[str, float]]:
    """``token_rewards − coef · kl`` on masked tokens (unchanged elsewhere), plus metrics.

    The KL is computed without gradient: it is part of the reward, not the loss.
    """
    with torch.no_grad():
        kl = kl_penalty(logprobs, ref_logprobs, kind)
        kl = torch.where(mask.bool(), kl, torch.zeros_like(kl))
    metrics = {KL_PENALTY_MEAN: float(masked_mean(kl, mask)), KL_PENALTY_COEF: float(coef)}
    return token_rewards - coef * kl, metrics


def kl_loss_term(
    logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor,
    mask: torch.Tensor,
    kind: str = "low_var_kl",
    coef: float = 0.0,
    loss_agg_mode: str = "token-mean",
) -> tuple[torch.Tensor, dict[str, float]]:
    """``coef · aggregate(kl)``, to be added to the policy loss, plus metrics."""
    kl = aggregate_loss(kl_penalty(logprobs, ref_logprobs, kind), mask, loss_agg_mode)
    return coef * kl, {KL_LOSS_VALUE: float(kl.detach()), KL_LOSS_COEF: float(coef)}
