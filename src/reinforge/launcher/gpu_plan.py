"""A run's placement plan (:mod:`reinforge.core.placement`) from its config, and the
places that obey it: the vLLM servers the run starts (their ``CUDA_VISIBLE_DEVICES``)
and the trainer (its ranks' GPUs, or the in-process trainer's device).

Under ``cluster.backend: ray`` there is no plan here: Ray reserves a GPU for every
replica and rank actor (``num_gpus`` in their bundles) and shows each its own.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from reinforge.config import ConfigError
from reinforge.core.placement import (
    GpuPlan,
    PlacementError,
    plan_gpus,
    tensor_parallel_size,
    visible_gpu_count,
)

if TYPE_CHECKING:
    from reinforge.config import ReinforgeConfig

TRAINING_MODES = ("both", "train", "sft")


def run_plan(cfg: ReinforgeConfig, gpus: int | None = None) -> GpuPlan | None:
    """This node's plan for ``cfg`` (``gpus``: default the visible ones), or None under
    Ray. Trainer ranks that a launcher starts (``trainer.parallel.listen``) are placed
    by their launcher: the plan then holds the engines only."""
    if cfg.cluster.backend == "ray":
        return None
    parallel = cfg.trainer.parallel
    training = cfg.mode in TRAINING_MODES and parallel.listen is None
    engines = cfg.model.vllm.replicas if cfg.model.engine == "vllm" else 0
    try:
        return plan_gpus(
            visible_gpu_count() if gpus is None else gpus,
            engine_replicas=engines,
            gpus_per_engine=tensor_parallel_size(cfg.model.vllm.extra_args),
            local_ranks=parallel.world_size if training else 1,
            trainer_device=cfg.trainer.device if training else "cpu",
            share=parallel.share_gpus,
        )
    except PlacementError as exc:
        raise ConfigError(f"placing the run on GPUs: {exc}") from None


def ray_trainer_ranks(cfg: ReinforgeConfig, cluster_gpus: float) -> int:
    """Trainer ranks that get a bundle (and a GPU) in the run's Ray placement group.
    Several ranks always; one rank where the cluster has GPUs and the trainer uses one
    (it then runs as a rank actor holding a GPU of its own, not in the driver on an
    unreserved ``cuda:0`` next to replica 0); none
    when not training or when a launcher starts the ranks."""
    parallel = cfg.trainer.parallel
    if cfg.mode not in TRAINING_MODES or parallel.listen is not None:
        return 0
    gpu = cluster_gpus > 0 and cfg.trainer.device != "cpu"
    return parallel.world_size if parallel.world_size > 1 or gpu else 0


def describe(cfg: ReinforgeConfig, gpus: int | None = None) -> list[str]:
    """The plan in words for ``reinforge config`` (``gpus``: default the visible ones);
    a plan that cannot be made is one line saying why."""
    parallel = cfg.trainer.parallel
    if cfg.cluster.backend == "ray":
        return [
            "cluster.backend: ray: Ray reserves 1 GPU for each vLLM replica and trainer "
            "rank actor where the cluster has GPUs (never shared)"
        ]
    try:
        lines = run_plan(cfg, gpus).describe()  # type: ignore[union-attr]
    except ConfigError as exc:
        return [f"cannot place the run: {exc}"]
    if parallel.listen is not None:
        lines.append(
            f"trainer: {parallel.world_size} rank(s) started by a launcher, connecting to "
            f"{parallel.listen}; each opens cuda:LOCAL_RANK of the GPUs it sees"
        )
    return lines


def placed_servers(plan: GpuPlan) -> Any:
    """A ``server_factory`` for the vLLM engine: replica ``i`` sees only its planned GPUs
    (a ``CUDA_VISIBLE_DEVICES`` in ``model.vllm.env`` still wins: it was asked for)."""
    from reinforge.models.engines.vllm.server import VLLMServer

    made = itertools.count()

    def make(**server_args: Any) -> VLLMServer:
        env = {**plan.engine_env(next(made)), **(server_args.pop("env", None) or {})}
        return VLLMServer(env=env, **server_args)

    return make
