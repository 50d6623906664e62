"""Entropy of the policy's next-token distribution, and the entropy bonus built on it.

``H = logsumexp(z) − Σ softmax(z) · z`` on max-shifted logits: no explicit
``log softmax``, no overflow or cancellation for large logits, and vocabulary
entries masked to ``−inf`` contribute 0.
"""

from __future__ import annotations

import torch

from reinforge.algorithms.aggregate import aggregate_loss
from reinforge.core.metric_names import ENTROPY_COEF, ENTROPY_VALUE


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy (nats) of ``softmax(logits)`` over the last dim; shape ``logits.shape[:-1]``."""
    logits = logits.float()
    # H is shift-invariant; subtracting the max keeps lse and Σ p·z small, so their
    # difference does not lose precision to cancellation.
    logits = logits - logits.amax(dim=-1, keepdim=True).detach()
    lse = torch.logsumexp(logits, dim=-1)
    probs = torch.softmax(logits, dim=-1)
    weighted = torch.where(probs > 0, probs * logits, torch.zeros_like(logits))
    return lse - weighted.sum(dim=-1)


def entropy_bonus(
    logits: torch.Tensor,
    mask: torch.Tensor,
    coef: float = 0.0,
    loss_agg_mode: str = "token-mean",
) -> tuple[torch.Tensor, dict[str, float]]:
    """Loss term ``−coef · aggregate(H)`` (adding it to the loss raises entropy), plus metrics.

    ``logits`` is ``[B, T, V]`` aligned with ``mask`` ``[B, T]``.
    """
    entropy = aggregate_loss(entropy_from_logits(logits), mask, loss_agg_mode)
    return -coef * entropy, {ENTROPY_VALUE: float(entropy.detach()), ENTROPY_COEF: float(coef)}
