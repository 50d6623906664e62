"""Reduce a per-token loss matrix ``[B, T]`` to the scalar that is back-propagated.

The choice changes how much each token weighs (see Dr. GRPO, Liu et al. 2025,
"Understanding R1-Zero-Like Training", and DAPO, Yu et al. 2025):

* ``token-mean``: every valid token in the batch weighs the same (DAPO's
  token-level loss; verl's default).
* ``seq-mean-token-sum``: sum over each sequence's tokens, mean over sequences;
  long responses weigh more.
* ``seq-mean-token-mean``: mean over each sequence's tokens, then over sequences
  (original GRPO); a token of a short response weighs more than one of a long one.
* ``seq-mean-token-sum-norm``: token sums divided by a fixed horizon (default: the
  padded width ``T``) and averaged over all ``B`` rows. The normaliser is a
  constant, which removes GRPO's length bias (Dr. GRPO). verl omits the ``1/B``;
  keeping it makes the scale comparable to the other modes.

The seq-mean modes other than ``-norm`` average over sequences that have at least
one valid token, so padding rows do not dilute the loss.
"""

from __future__ import annotations

import torch

from reinforge.algorithms.masked import masked_count, masked_sum

LOSS_AGG_MODES: tuple[str, ...] = (
    "token-mean",
    "seq-mean-token-sum",
    "seq-mean-token-mean",
    "seq-mean-token-sum-norm",
)


def check_loss_agg_mode(mode: str) -> None:
    """Raise ``ValueError`` naming the valid modes if ``mode`` is not one of them."""
    if mode not in LOSS_AGG_MODES:
        raise ValueError(f"unknown loss_agg_mode '{mode}'; use one of {', '.join(LOSS_AGG_MODES)}")


def aggregate_loss(
    loss_mat: torch.Tensor,
    mask: torch.Tensor,
    mode: str = "token-mean",
    horizon: int | None = None,
) -> torch.Tensor:
    """Scalar loss from ``loss_mat`` ``[B, T]`` over the entries where ``mask`` is set.

    ``horizon`` is the fixed normaliser of ``seq-mean-token-sum-norm`` (default ``T``);
    the other modes ignore it. An all-empty mask gives a zero loss that still has a
    (zero) gradient.
    """
    check_loss_agg_mode(mode)
    if loss_mat.dim() != 2 or loss_mat.shape != mask.shape:
        raise ValueError(
            f"aggregate_loss expects matching [B, T] tensors, got {tuple(loss_mat.shape)} "
            f"and mask {tuple(mask.shape)}"
        )
    if mode == "token-mean":
        return masked_sum(loss_mat, mask) / masked_count(mask).clamp(min=1.0)
    if mode == "seq-mean-token-sum-norm":
        norm = float(horizon if horizon is not None else loss_mat.shape[-1])
        if norm <= 0:
            raise ValueError(f"horizon must be positive, got {horizon}")
        return masked_sum(loss_mat, mask) / (loss_mat.shape[0] * norm)
    seq_loss = masked_sum(loss_mat, mask, dim=-1)
    seq_len = masked_count(mask, dim=-1)
    if mode == "seq-mean-token-mean":
        seq_loss = seq_loss / seq_len.clamp(min=1.0)
    non_empty = seq_len > 0
    return masked_sum(seq_loss, non_empty) / masked_count(non_empty).clamp(min=1.0)
