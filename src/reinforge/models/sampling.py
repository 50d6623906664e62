"""Token sampling for one decode step: the whole batch at once.

Why batched: drawing each row with its own ``torch.multinomial`` call cost more
per decode step than the rest of the Python bookkeeping put together (one
softmax and one multinomial over the full vocabulary per row). Here the batch is
filtered and normalised in a few tensor ops and every row is sampled by inverse
CDF: a single uniform number per row, drawn from that row's own seeded
``random.Random``, is located in the row's cumulative distribution with one
``searchsorted``. A row's tokens therefore depend only on its seed and its
logits, never on which other rows share the batch.

Filtering semantics (same as vLLM / HF): logits are divided by the temperature,
then top-k keeps the tokens whose scaled logit is at least the k-th largest (ties
at the boundary are kept), then top-p keeps the smallest prefix of the sorted
distribution whose mass reaches ``top_p`` (a token is dropped when the mass
*before* it already reaches ``top_p``). Temperature 0 means greedy (argmax of the
raw logits).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch

_NEG_INF = float("-inf")


def filter_logits_batch(
    scaled: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor
) -> torch.Tensor:
    """Apply per-row top-k and top-p to already temperature-scaled ``[rows, vocab]`` logits.

    ``top_k[i] <= 0`` or ``>= vocab`` disables top-k for row ``i``; ``top_p[i] >= 1``
    disables top-p. Returns a new tensor with the dropped entries set to ``-inf``.
    """
    vocab = scaled.shape[-1]
    sorted_vals, order = torch.sort(scaled, dim=-1, descending=True)
    use_k = (top_k > 0) & (top_k < vocab)
    if bool(use_k.any()):
        kth_index = (top_k.clamp(min=1, max=vocab) - 1)[:, None]
        kth = sorted_vals.gather(-1, kth_index)
        kth = torch.where(use_k[:, None], kth, torch.full_like(kth, _NEG_INF))
        sorted_vals = sorted_vals.masked_fill(sorted_vals < kth, _NEG_INF)
    else:
        kth = None
    drop_sorted = None
    use_p = top_p < 1.0
    if bool(use_p.any()):
        probs = torch.softmax(sorted_vals, dim=-1)
        mass_before = probs.cumsum(-1) - probs
        limit = torch.where(use_p, top_p, torch.full_like(top_p, float("inf")))[:, None]
        drop_sorted = mass_before >= limit
    out = scaled if kth is None else scaled.masked_fill(scaled < kth, _NEG_INF)
    if drop_sorted is not None:
        drop = torch.zeros_like(drop_sorted).scatter_(-1, order, drop_sorted)
        out = out.masked_fill(drop, _NEG_INF)
    return out


def filter_logits(
    logits: torch.Tensor, temperature: float, top_k: int, top_p: float
) -> torch.Tensor:
    """Temperature, top-k and top-p filtering of a single 1-D logits vector."""
    scaled = (logits.float() / temperature)[None]
    k = torch.tensor([top_k], device=logits.device)
    p = torch.tensor([top_p], dtype=torch.float32, device=logits.device)
    return filter_logits_batch(scaled, k, p)[0]


def sample_batch(
    logits: torch.Tensor,
    temperatures: Sequence[float],
    top_ks: Sequence[int],
    top_ps: Sequence[float],
    uniforms: Sequence[float],
    logprobs: torch.Tensor | None = None,
) -> torch.Tensor:
    """Sample one token per row of ``[rows, vocab]`` logits; returns a ``[rows]`` long tensor.

    ``uniforms[i]`` in ``[0, 1)`` is row ``i``'s random draw: the same logits and
    the same draw always give the same token. Rows with temperature 0 take the
    argmax and ignore their draw. ``logprobs`` may pass ``log_softmax(logits)``
    when the caller has it anyway; plain temperature-1 batches then reuse it.
    """
    logits = logits.float()
    rows, vocab = logits.shape
    device = logits.device
    greedy = [t == 0 for t in temperatures]
    if all(greedy):
        return logits.argmax(-1)
    plain = all(t == 1.0 for t in temperatures)
    if plain:
        scaled = logits
    else:
        temps = torch.tensor([t if t > 0 else 1.0 for t in temperatures], device=device)
        scaled = logits / temps[:, None]
    filtered = [
        i for i in range(rows) if not greedy[i] and (0 < top_ks[i] < vocab or top_ps[i] < 1.0)
    ]
    if filtered:
        index = torch.tensor(filtered, device=device)
        part = filter_logits_batch(
            scaled[index],
            torch.tensor([top_ks[i] for i in filtered], device=device),
            torch.tensor([float(top_ps[i]) for i in filtered], device=device),
        )
        scaled = scaled.index_copy(0, index, part)
    # exp(log_softmax) on every path, so reusing the caller's log-probabilities gives
    # the same bits as computing them here
    if plain and not filtered and logprobs is not None:
        probs = logprobs.exp()
    else:
        probs = torch.log_softmax(scaled, dim=-1).exp()
    # float64 running sum: over a 50k vocabulary float32 rounding would shift the
    # bucket edges by more than the smallest probabilities we may want to hit
    cdf = probs.cumsum(-1, dtype=torch.float64)
    draw = torch.tensor(uniforms, dtype=torch.float64, device=device)[:, None] * cdf[:, -1:]
    chosen = torch.searchsorted(cdf, draw, right=True)[:, 0].clamp_(max=vocab - 1)
    # right=True never lands on a zero-probability bucket, except when rounding puts
    # the draw at the very top of the CDF; fall back to the mode in that case
    impossible = probs.gather(-1, chosen[:, None])[:, 0] <= 0
    if bool(impossible.any()):
        chosen = torch.where(impossible, probs.argmax(-1), chosen)
    if any(greedy):
        mask = torch.tensor(greedy, device=device)
        chosen = torch.where(mask, logits.argmax(-1), chosen)
    return chosen


def sample_token(
    logits: torch.Tensor, temperature: float, top_k: int, top_p: float, rng: random.Random
) -> int:
    """Sample one token id from a 1-D logits vector (greedy when temperature == 0)."""
    return int(sample_batch(logits[None], [temperature], [top_k], [top_p], [rng.random()])[0])
