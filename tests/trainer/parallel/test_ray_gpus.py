"""Under ``cluster.backend: ray`` on a cluster with GPUs, vLLM replicas and trainer ranks
never share a GPU: Ray reserves one for each (``num_gpus`` in their bundles) and shows
each only its own (``CUDA_VISIBLE_DEVICES``). Run with 4 pretended GPUs
(``ray.init(num_gpus=4)`` on the CPU): what each replica's vLLM server would be started
with, and what each real rank process saw."""

from __future__ import annotations

from pathlib import Path

import pytest

from reinforge.config import load_config
from reinforge.explorer.cluster_config import ClusterConfig
from reinforge.launcher.gpu_plan import ray_trainer_ranks
from reinforge.trainer.parallel.ranked_trainer import RankedTrainer
from reinforge.trainer.trainer_config import TrainerConfig

ray = pytest.importorskip("ray")


def server_gpus(host: object) -> str | None:
    """In a replica actor: the CUDA_VISIBLE_DEVICES its vLLM server would get."""
    return host.server.environment().get("CUDA_VISIBLE_DEVICES")  # type: ignore[attr-defined]


def test_replicas_and_ranks_each_get_a_gpu_of_their_own(
    tiny_model_path: Path, tmp_path: Path
) -> None:
    from reinforge.explorer.ray_backend import Placement, replica_factory

    cluster = ClusterConfig(runner_actors=1, runner_cpus=0.5, engine_cpus=0.5)
    parallel = {"world_size": 2, "strategy": "ddp", "timeout_s": 120, "threads_per_rank": 1}
    cfg = TrainerConfig.model_validate({"lr": 1e-3, "parallel": parallel})
    ray.init(num_cpus=4, num_gpus=4, include_dashboard=False, log_to_driver=False)
    try:
        placement = Placement(cluster, 2, trainer_ranks=2)
        try:
            assert placement.gpus == 1.0
            make = replica_factory(cluster, placement)
            server = {"python": "python", "served_name": "policy", "max_model_len": 64}
            replicas = [
                make(model_dir=str(tiny_model_path), log_path=tmp_path / f"{i}.log", **server)
                for i in range(2)
            ]
            engines = [
                ray.get(r.actor.__ray_call__.remote(server_gpus), timeout=60) for r in replicas
            ]
            with RankedTrainer(tiny_model_path, cfg, pad_token_id=0, placement=placement) as ranks:
                trainer = [r["visible"] for r in ranks.ranks]
                devices = [r["device"] for r in ranks.ranks]
            for replica in replicas:
                ray.kill(replica.actor)
        finally:
            placement.remove()
    finally:
        ray.shutdown()
    ids = [*engines, *trainer]
    assert all(ids) and all("," not in i for i in ids), ids  # one GPU each
    assert len(set(ids)) == 4, ids  # none shared
    assert devices == ["cpu", "cpu"]  # pretended GPUs: torch sees none, computes on the CPU


def test_one_rank_gets_a_reserved_gpu_where_the_cluster_has_gpus(tmp_path: Path) -> None:
    """Not the driver's unreserved cuda:0 next to replica 0."""
    path = tmp_path / "c.yaml"
    path.write_text("model: {engine: vllm}\ncluster: {backend: ray}\n")
    one = load_config(path)
    assert ray_trainer_ranks(one, cluster_gpus=4) == 1
    assert ray_trainer_ranks(one, cluster_gpus=0) == 0  # CPUs only: it trains in the driver
    cpu = load_config(path, overrides=["trainer.device=cpu"])
    assert ray_trainer_ranks(cpu, cluster_gpus=4) == 0
    two = load_config(path, overrides=["trainer.parallel.world_size=2"])
    assert ray_trainer_ranks(two, cluster_gpus=0) == 2
    assert ray_trainer_ranks(load_config(path, overrides=["mode=explore"]), cluster_gpus=4) == 0
