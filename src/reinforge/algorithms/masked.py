"""Reductions over the valid entries of padded tensors.

Padded positions may hold garbage (even ``inf``/``nan`` from a model's logits), so
values are selected with ``torch.where`` rather than multiplied by the mask.
"""

from __future__ import annotations

import torch


def _select(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.where(mask.bool(), values, torch.zeros_like(values))


def masked_sum(values: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Sum of ``values`` where ``mask`` is set (over all entries, or along ``dim``)."""
    picked = _select(values, mask)
    return picked.sum() if dim is None else picked.sum(dim=dim)


def masked_count(mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Number of set entries of ``mask`` as a float tensor."""
    m = mask.bool().to(torch.float32)
    return m.sum() if dim is None else m.sum(dim=dim)


def masked_mean(values: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Mean over the set entries; 0 where there are none (never ``nan``)."""
    count = masked_count(mask, dim).to(values.dtype).clamp(min=1.0)
    return masked_sum(values, mask, dim) / count


def masked_var(values: torch.Tensor, mask: torch.Tensor, unbiased: bool = True) -> torch.Tensor:
    """Variance over all set entries (Bessel-corrected by default); 0 for fewer than 2."""
    count = masked_count(mask).to(values.dtype)
    mean = masked_mean(values, mask)
    sq = masked_sum((values - mean) ** 2, mask)
    denom = count - 1.0 if unbiased else count
    if float(denom) <= 0.0:
        return torch.zeros((), dtype=values.dtype, device=values.device)
    return sq / denom


def masked_whiten(
    values: torch.Tensor, mask: torch.Tensor, epsilon: float = 1e-8, shift_mean: bool = True
) -> torch.Tensor:
    """``(v - mean) / (std + eps)`` with statistics from the set entries; 0 elsewhere."""
    mean = masked_mean(values, mask)
    std = masked_var(values, mask).sqrt()
    centred = values - mean if shift_mean else values
    return _select(centred / (std + epsilon), mask)
