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


def training_state_bytes(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> int:
    """Bytes this process holds of the trainable parameters, their gradients (counted at
    their full size: they exist during every step) and the optimizer state; of a
    sharded model, the local shards only."""
    from torch.distributed.tensor import DTensor

    def size(t: torch.Tensor) -> int:
        t = t.to_local() if isinstance(t, DTensor) else t
        return t.numel() * t.element_size()

    params = sum(size(p) for p in model.parameters() if p.requires_grad)
    state = sum(
        size(value)
        for per_param in optimizer.state.values()
        for value in per_param.values()
        if isinstance(value, torch.Tensor)
    )
    return 2 * params + state


def bytes_per_rank(value: int) -> list[int]:
    """Every rank's ``value``, in rank order (a collective)."""
    values: list[int | None] = [None] * dist.get_world_size()
    dist.all_gather_object(values, value)
    return [int(v or 0) for v in values]
