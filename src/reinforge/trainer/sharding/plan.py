"""Which rank trains which micro-batch of a step.

A step's micro-batches are the single-process trainer's (experiences sorted by length,
``micro_batch_size`` at a time), each weighted by its share of the whole step's loss,
so the ranks' summed gradients are the single-process gradient. The plan only decides
who computes which: every rank gets the same number of slots (a collective per
forward and backward must pair up across ranks), and the tokens are balanced within
that, the largest micro-batch first onto the least loaded rank. A rank with fewer
micro-batches than slots fills the rest with empty passes that add nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def assign(tokens: Sequence[int], world_size: int) -> list[list[int]]:
    """Per rank, the indices (ascending) of the micro-batches it trains, given each
    micro-batch's token count. Deterministic: every rank computes the same plan."""
    if world_size < 1:
        raise ValueError("world_size must be at least 1")
    slots = math.ceil(len(tokens) / world_size) if tokens else 0
    load = [0] * world_size
    owned: list[list[int]] = [[] for _ in range(world_size)]
    for index in sorted(range(len(tokens)), key=lambda i: (-tokens[i], i)):
        open_ranks = [r for r in range(world_size) if len(owned[r]) < slots]
        rank = min(open_ranks, key=lambda r: (load[r], r))
        owned[rank].append(index)
        load[rank] += tokens[index]
    return [sorted(indices) for indices in owned]


def slot_count(plan: Sequence[Sequence[int]]) -> int:
    """Passes every rank runs: the most micro-batches any rank got."""
    return max((len(p) for p in plan), default=0)
