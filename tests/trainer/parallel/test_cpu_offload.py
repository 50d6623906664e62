"""``trainer.parallel.cpu_offload: true``: two FSDP2 ranks whose shards live in host
memory (gloo on the CPU) train what one process trains, gradient-norm clipping
included; on GPUs the ranks' group pairs NCCL with gloo for the offloaded shards."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from reinforge.core import Experience
from reinforge.trainer.parallel.ranked_trainer import RankedTrainer
from reinforge.trainer.sharding.strategy import process_group_backend
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

TOLERANCE = 1e-4  # as test_ranks.py: Adam's float noise is ~lr x 0.02


def config(**parallel: object) -> TrainerConfig:
    # a small max_grad_norm, so clipping the offloaded shards changes the update
    data = {"lr": 1e-3, "micro_batch_size": 3, "max_grad_norm": 0.05}
    if parallel:
        data["parallel"] = {"world_size": 2, "timeout_s": 300, "threads_per_rank": 1, **parallel}
    return TrainerConfig.model_validate(data)


def test_two_offloaded_fsdp2_ranks_train_what_one_process_trains(
    tiny_model_path: Path, rank_batch: list[Experience]
) -> None:
    single = Trainer(tiny_model_path, config(), pad_token_id=0)
    start = {k: v.detach().clone() for k, v in single.weights_for_sync().items()}
    norms = [single.train_step(copy.deepcopy(rank_batch)).metrics["train/grad_norm"]]
    norms.append(single.train_step(copy.deepcopy(rank_batch)).metrics["train/grad_norm"])
    assert min(norms) > 0.05  # the limit clips both steps
    cfg = config(strategy="fsdp2", cpu_offload=True)
    with RankedTrainer(tiny_model_path, cfg, pad_token_id=0) as ranked:
        metrics = [ranked.train_step(copy.deepcopy(rank_batch)).metrics for _ in range(2)]
        weights = ranked.weights_for_sync()
    expected = single.weights_for_sync()
    assert max(float((weights[k] - expected[k]).abs().max()) for k in expected) < TOLERANCE
    # and both trained at all (equal weights that never moved would pass the check above)
    assert max(float((weights[k] - start[k]).abs().max()) for k in start) > 10 * TOLERANCE
    for step, norm in zip(metrics, norms, strict=True):
        assert step["train/grad_norm"] == pytest.approx(norm, rel=1e-3)


def test_ranks_on_gpus_have_a_cpu_backend_for_offloaded_shards() -> None:
    from torch.distributed.distributed_c10d import Backend, BackendConfig

    assert process_group_backend("cpu") == "gloo"
    on_gpus = BackendConfig(Backend(process_group_backend("cuda:1")))
    assert on_gpus.get_device_backend_map() == {"cuda": "nccl", "cpu": "gloo"}
