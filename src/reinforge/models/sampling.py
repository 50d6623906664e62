"""Token sampling for one decode step, row by row, with per-row seeded generators."""

from __future__ import annotations

import torch


def filter_logits(
    logits: torch.Tensor, temperature: float, top_k: int, top_p: float
) -> torch.Tensor:
    """Apply temperature, top-k and nucleus (top-p) filtering to a 1-D logits vector."""
    scaled = logits / temperature
    if 0 < top_k < scaled.numel():
        kth = torch.topk(scaled, top_k).values[-1]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(scaled, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        # drop a token when the mass *before* it already reaches top_p
        drop = (probs.cumsum(-1) - probs) >= top_p
        scaled = scaled.clone()
        scaled[order[drop]] = float("-inf")
    return scaled


def sample_token(
    logits: torch.Tensor, temperature: float, top_k: int, top_p: float, generator: torch.Generator
) -> int:
    """Sample one token id from a 1-D logits vector (greedy when temperature == 0)."""
    if temperature == 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(filter_logits(logits.float(), temperature, top_k, top_p), dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))
