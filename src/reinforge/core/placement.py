"""One placement plan for a node's GPUs: which GPUs the inference engines (vLLM servers
reinforge starts) get, and which the trainer's local ranks get.

Both sides read the same plan, so they cannot collide: engines take the first GPUs,
the trainer's ranks the next ones, disjoint unless the config asks them to share
(``trainer.parallel.share_gpus``). A rank process sees only the trainer's GPUs
(``CUDA_VISIBLE_DEVICES``) and opens ``cuda:LOCAL_RANK`` of them: the convention of
torchrun, Slurm and Kubeflow, so a rank does the same whoever started it. A trainer
that runs inside the driver (one rank) opens its GPU by its index instead.

GPU ids here are indices into the GPUs this process sees; :func:`physical_ids` maps
them back through the caller's own ``CUDA_VISIBLE_DEVICES`` for a child's environment.
Under Ray, Ray itself hands every replica and rank actor a GPU of its own
(``num_gpus=1`` in their bundles); this plan is for one node's processes.

Pure functions and a frozen dataclass: importable from every layer (the explorer's
engines and the trainer) and testable without a GPU.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

#: pretend this many GPUs are visible: the plan (and what each rank reports it would
#: open) is made as on such a node while tensors stay on the CPU; for tests and for
#: ``reinforge config`` on a machine other than the one that will run
VISIBLE_GPUS_ENV = "REINFORGE_VISIBLE_GPUS"


class PlacementError(ValueError):
    """The GPUs cannot be split as the config asks."""


@dataclass(frozen=True)
class GpuPlan:
    """Where everything of one node runs. Empty tuples mean the CPU."""

    #: GPUs visible on the node
    gpus: int
    #: per engine replica, the GPU ids it gets
    engines: tuple[tuple[int, ...], ...] = ()
    #: per local trainer rank, the GPU id it gets (empty: the trainer is on the CPU)
    ranks: tuple[int, ...] = ()
    #: engines and ranks may share GPUs (asked for by the config)
    shared: bool = False

    def rank_device(self, local_rank: int, *, in_process: bool = False) -> str:
        """The torch device of ``local_rank``: ``cuda:LOCAL_RANK`` of a rank process's
        visible set (the trainer's GPUs, see :meth:`rank_env`), or the GPU's own index
        for a trainer ``in_process`` with the driver (which sees every GPU)."""
        if not self.ranks:
            return "cpu"
        return f"cuda:{self.ranks[local_rank] if in_process else local_rank}"

    def rank_env(self, visible: str | None = None) -> dict[str, str]:
        """Environment of every rank process: only the trainer's GPUs visible."""
        if not self.ranks:
            return {}
        return {"CUDA_VISIBLE_DEVICES": ",".join(physical_ids(self.ranks, visible))}

    def engine_env(self, replica: int, visible: str | None = None) -> dict[str, str]:
        """Environment of engine replica ``replica``: only its GPUs visible."""
        if not self.engines:
            return {}
        return {"CUDA_VISIBLE_DEVICES": ",".join(physical_ids(self.engines[replica], visible))}

    def describe(self) -> list[str]:
        """The plan in words, one line per user of GPUs (what ``reinforge config`` shows)."""
        if not self.gpus:
            return ["no GPU visible: engines and trainer ranks run on the CPU"]
        lines = [f"{self.gpus} GPU(s) visible" + (", shared on request" if self.shared else "")]
        for i, ids in enumerate(self.engines):
            lines.append(f"engine replica {i}: GPU {_ids(ids)}")
        if not self.ranks:
            lines.append("trainer: CPU")
        for rank, gpu in enumerate(self.ranks):
            lines.append(f"trainer local rank {rank}: GPU {gpu}")
        return lines


def _ids(ids: Sequence[int]) -> str:
    return ",".join(str(i) for i in ids)


def physical_ids(ids: Sequence[int], visible: str | None = None) -> list[str]:
    """``ids`` (indices into this process's GPUs) as the names a child's
    ``CUDA_VISIBLE_DEVICES`` needs: through ``visible`` (default: this process's own
    ``CUDA_VISIBLE_DEVICES``) when that is set."""
    if visible is None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    names = [v.strip() for v in visible.split(",") if v.strip()] if visible else []
    if not names:
        return [str(i) for i in ids]
    return [names[i] for i in ids]


def visible_gpu_count() -> int:
    """GPUs this process can use: ``$REINFORGE_VISIBLE_GPUS`` when set, else torch's count."""
    pretend = os.environ.get(VISIBLE_GPUS_ENV)
    if pretend:
        return int(pretend)
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def plan_gpus(
    gpus: int,
    *,
    engine_replicas: int = 0,
    gpus_per_engine: int = 1,
    local_ranks: int = 1,
    trainer_device: str = "auto",
    share: bool = False,
) -> GpuPlan:
    """Split ``gpus`` between ``engine_replicas`` engines (``gpus_per_engine`` each) and
    ``local_ranks`` trainer ranks (one GPU each).

    ``trainer_device``: ``auto`` (GPUs when there are any), ``cuda`` (GPUs, required),
    ``cuda:N`` (the ranks' GPUs start at N) or ``cpu``. Engines take GPUs ``0..``, the
    ranks the ones after; with ``share`` the ranks fill free GPUs first, then the
    engines'. Raises :class:`PlacementError` when the GPUs are too few.
    """
    if gpus < 0 or engine_replicas < 0 or gpus_per_engine < 1 or local_ranks < 1:
        raise PlacementError("gpus, engine replicas, GPUs per engine and ranks must be positive")
    if gpus == 0:
        if trainer_device.startswith("cuda"):
            raise PlacementError(
                f"trainer.device: {trainer_device} asks for a GPU, but none is visible "
                "(a CPU build of torch, or CUDA_VISIBLE_DEVICES hides them); use cpu or auto"
            )
        return GpuPlan(0)
    need = engine_replicas * gpus_per_engine
    if need > gpus:
        raise PlacementError(
            f"{engine_replicas} engine replica(s) x {gpus_per_engine} GPU(s) need {need} "
            f"GPUs, but {gpus} are visible"
        )
    engines = tuple(
        tuple(range(r * gpus_per_engine, (r + 1) * gpus_per_engine)) for r in range(engine_replicas)
    )
    if trainer_device == "cpu":
        return GpuPlan(gpus, engines, (), share)
    if trainer_device.startswith("cuda:"):
        first = int(trainer_device.split(":", 1)[1])
        ranks = tuple(range(first, first + local_ranks))
    elif share:
        free = [g for g in range(need, gpus)] + list(range(need))
        ranks = tuple(free[:local_ranks])
    else:
        ranks = tuple(range(need, need + local_ranks))
    if len(ranks) < local_ranks or max(ranks) >= gpus:
        raise PlacementError(
            f"{local_ranks} trainer rank(s) need a GPU each"
            + (f" after the engines' {need}" if need and not share else "")
            + f" ({_ids(ranks) or 'none left'} asked), but {gpus} are visible; lower "
            "trainer.parallel.world_size or model.vllm.replicas"
            + ("" if share else ", or set trainer.parallel.share_gpus: true")
        )
    taken = {g for ids in engines for g in ids}
    if not share and taken & set(ranks):
        raise PlacementError(
            f"trainer.device: {trainer_device} puts trainer ranks on GPU(s) "
            f"{_ids(sorted(taken & set(ranks)))}, which the engines use; pick another "
            "GPU or set trainer.parallel.share_gpus: true"
        )
    return GpuPlan(gpus, engines, ranks, share)


def tensor_parallel_size(extra_args: Sequence[str]) -> int:
    """GPUs one vLLM replica uses: its ``--tensor-parallel-size`` (``-tp``) argument, or 1."""
    args = list(extra_args)
    for i, arg in enumerate(args):
        for flag in ("--tensor-parallel-size", "-tp"):
            if arg == flag and i + 1 < len(args):
                return int(args[i + 1])
            if arg.startswith(flag + "="):
                return int(arg.split("=", 1)[1])
    return 1
