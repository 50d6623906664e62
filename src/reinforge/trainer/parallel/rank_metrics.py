"""A step's metrics over the trainer's ranks: each rank measures its own micro-batches,
and every rank reports the same numbers for the whole step."""

from __future__ import annotations

import torch
import torch.distributed as dist

from reinforge.core.metric_names import TRAIN_RANK_TIME_MAX, TRAIN_RANK_TIME_MIN


def gather_micro_batch_values(values: dict[str, list[float]]) -> dict[str, list[float]]:
    """Every rank's per-micro-batch values of each metric, joined (a collective)."""
    gathered: list[dict[str, list[float]] | None] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, values)
    joined: dict[str, list[float]] = {}
    for part in gathered:
        for key, items in (part or {}).items():
            joined.setdefault(key, []).extend(items)
    return joined


def rank_times(seconds: float) -> dict[str, float]:
    """The slowest and the fastest rank's time for the same phase (a collective)."""
    times: list[float | None] = [None] * dist.get_world_size()
    dist.all_gather_object(times, seconds)
    known = [float(t) for t in times if t is not None]
    return {TRAIN_RANK_TIME_MAX: max(known), TRAIN_RANK_TIME_MIN: min(known)}


def sum_over_ranks(value: float) -> float:
    """``value`` summed over the ranks (a collective)."""
    tensor = torch.tensor([value], dtype=torch.float64)
    if dist.get_backend() == "nccl":
        tensor = tensor.cuda()
    dist.all_reduce(tensor)
    return float(tensor.item())
