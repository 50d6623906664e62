"""Trainer ranks as Ray actors in the run's placement group (``cluster.backend: ray``)
train what one process trains, and are gone when the handle closes."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from reinforge.core import Experience
from reinforge.explorer.cluster_config import ClusterConfig
from reinforge.trainer.parallel.ranked_trainer import RankedTrainer
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

ray = pytest.importorskip("ray")


def test_ray_actor_ranks_train_what_one_process_trains(
    tiny_model_path: Path, rank_batch: list[Experience]
) -> None:
    from reinforge.explorer.ray_backend import Placement

    base = {"lr": 1e-3, "micro_batch_size": 3}
    single = Trainer(tiny_model_path, TrainerConfig.model_validate(base), pad_token_id=0)
    start = {k: v.detach().clone() for k, v in single.weights_for_sync().items()}
    single.train_step(copy.deepcopy(rank_batch))
    parallel = {"world_size": 2, "strategy": "ddp", "timeout_s": 120, "threads_per_rank": 1}
    cfg = TrainerConfig.model_validate({**base, "parallel": parallel})
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    try:
        placement = Placement(ClusterConfig(runner_actors=1), 0, trainer_ranks=2)
        try:
            with RankedTrainer(tiny_model_path, cfg, pad_token_id=0, placement=placement) as ranks:
                assert all(type(p).__name__ == "RayRankProcess" for p in ranks._procs)
                ranks.train_step(copy.deepcopy(rank_batch))
                weights = ranks.weights_for_sync()
                procs = ranks._procs
            assert all(p.poll() is not None for p in procs)  # closed: every rank exited
        finally:
            placement.remove()
    finally:
        ray.shutdown()
    expected = single.weights_for_sync()
    assert max(float((weights[k] - expected[k]).abs().max()) for k in expected) < 1e-4
    # and both trained at all (equal weights that never moved would pass the check above)
    assert max(float((weights[k] - start[k]).abs().max()) for k in start) > 1e-3
