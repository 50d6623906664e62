"""The sampler's log-probs against the trainer's: how far apart they are, and the
truncated importance-sampling (TIS) correction of the policy gradient for it.

An engine samples with other numerics than the trainer's forward (vLLM or a bf16
engine against an fp32 trainer), so the tokens of a batch were drawn from
``π_sampler``, not from the trainer's ``π_old``, even on the same weights. The
policy gradient then carries a bias; weighting each token's term by
``π_old/π_sampler`` removes it, and capping that weight at ``C`` bounds the variance
a rare token with a tiny sampler probability would add (Yao et al. 2025, "Your
efficient RL framework secretly brings you off-policy RL training"; verl calls it
``rollout_is`` with ``rollout_is_threshold``, formerly ``tis_imp_ratio_cap``).

``SamplerCorrection`` is the algorithm option; ``truncated_is_weights`` computes the
detached per-token weights a policy loss takes as ``token_weights``;
``log_ratio_stats`` summarises the per-token log-ratio for the step's metrics.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from reinforge.algorithms.masked import masked_mean
from reinforge.algorithms.policy_loss.common import fraction
from reinforge.core.metric_names import (
    SAMPLER_ABS_LOG_RATIO_MAX,
    SAMPLER_ABS_LOG_RATIO_MEAN,
    SAMPLER_LOG_RATIO_MAX,
    SAMPLER_LOG_RATIO_MEAN,
    SAMPLER_LOG_RATIO_MIN,
    SAMPLER_TIS_CAPPED_FRAC,
    SAMPLER_TIS_WEIGHT_MEAN,
)

#: the correction kinds ``SamplerCorrection.type`` accepts
CORRECTION_TYPES = ("tis",)


@dataclass(frozen=True)
class SamplerCorrection:
    """``algorithm_args.sampler_correction``: weight each token's policy-gradient term
    by ``min(π_old/π_sampler, cap)`` (``type: tis``). ``cap`` may be ``.inf`` (plain
    importance weighting); below 1 it would shrink every token, exact ones included,
    so it is refused."""

    type: str = "tis"
    cap: float = 2.0

    def __post_init__(self) -> None:
        if self.type not in CORRECTION_TYPES:
            raise ValueError(
                f"sampler_correction.type '{self.type}' is unknown; use one of "
                f"{', '.join(CORRECTION_TYPES)}"
            )
        cap = self.cap
        if isinstance(cap, bool) or not isinstance(cap, int | float) or math.isnan(cap):
            raise ValueError(f"sampler_correction.cap must be a number >= 1, got {cap!r}")
        if cap < 1.0:
            raise ValueError(
                f"sampler_correction.cap must be >= 1 (a smaller cap shrinks every token's "
                f"weight), got {cap}"
            )
        object.__setattr__(self, "cap", float(cap))

    @classmethod
    def parse(cls, value: SamplerCorrection | Mapping[str, Any] | None) -> SamplerCorrection | None:
        """The option from a YAML mapping (``{type: tis, cap: 2.0}``), or None when off."""
        if value is None or isinstance(value, SamplerCorrection):
            return value
        if not isinstance(value, Mapping):
            raise ValueError(
                f"sampler_correction must be a mapping like {{type: tis, cap: 2.0}} or null, "
                f"got {value!r}"
            )
        unknown = sorted(set(value) - {"type", "cap"})
        if unknown:
            raise ValueError(f"sampler_correction has unknown keys {unknown}; valid: cap, type")
        return cls(**value)


def truncated_is_weights(
    old_logprobs: torch.Tensor,
    sampler_logprobs: torch.Tensor,
    mask: torch.Tensor,
    cap: float,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Per-token weights ``min(exp(old − sampler), cap)`` where ``mask`` is set, 1
    elsewhere (``[B, T]``, detached), and their mean and capped share on ``mask`` (no
    metrics when ``mask`` is empty)."""
    log_ratio = (old_logprobs.detach() - sampler_logprobs.detach()).to(torch.float32)
    ratio = log_ratio.exp()
    capped = ratio > cap
    weights = torch.where(mask.bool(), ratio.clamp(max=cap), torch.ones_like(ratio))
    if not bool(mask.any()):
        return weights, {}
    metrics = {
        SAMPLER_TIS_WEIGHT_MEAN: float(masked_mean(weights, mask)),
        SAMPLER_TIS_CAPPED_FRAC: fraction(capped, mask),
    }
    return weights, metrics


def log_ratio_stats(log_ratio: torch.Tensor, mask: torch.Tensor) -> dict[str, float]:
    """Mean, max and min of ``log_ratio`` and the mean and max of its absolute value over
    the tokens in ``mask`` (which must hold at least one)."""
    values = log_ratio.detach()[mask.bool()].to(torch.float32)
    if values.numel() == 0:
        raise ValueError("log_ratio_stats needs at least one token in mask")
    magnitude = values.abs()
    return {
        SAMPLER_LOG_RATIO_MEAN: float(values.mean()),
        SAMPLER_LOG_RATIO_MAX: float(values.max()),
        SAMPLER_LOG_RATIO_MIN: float(values.min()),
        SAMPLER_ABS_LOG_RATIO_MEAN: float(magnitude.mean()),
        SAMPLER_ABS_LOG_RATIO_MAX: float(magnitude.max()),
    }
