"""Which device each trainer rank opens, end to end through the real handshake: the
driver's placement plan reaches every rank process (its CUDA_VISIBLE_DEVICES and its
cuda:LOCAL_RANK), on a CPU machine that pretends to have GPUs
($REINFORGE_VISIBLE_GPUS: the ranks report the device they would open and compute on
the CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reinforge.core.placement import VISIBLE_GPUS_ENV, plan_gpus
from reinforge.trainer.parallel.rank_worker import choose_device
from reinforge.trainer.parallel.ranked_trainer import RankedTrainer
from reinforge.trainer.trainer_config import TrainerConfig


def test_each_local_rank_opens_its_own_gpu_next_to_an_engine(
    tiny_model_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VISIBLE_GPUS_ENV, "4")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    parallel = {"world_size": 2, "strategy": "ddp", "timeout_s": 300, "threads_per_rank": 1}
    cfg = TrainerConfig.model_validate({"lr": 1e-3, "parallel": parallel})
    plan = plan_gpus(4, engine_replicas=1, local_ranks=2)  # the engine has GPU 0
    with RankedTrainer(tiny_model_path, cfg, pad_token_id=0, plan=plan) as ranked:
        seen = [(r["local_rank"], r["visible"], r["device"]) for r in ranked.ranks]
    assert seen == [(0, "1,2", "cuda:0"), (1, "1,2", "cuda:1")]


def test_launcher_started_ranks_follow_local_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranks that torchrun/srun/Ray started get no plan from the driver."""
    monkeypatch.setenv(VISIBLE_GPUS_ENV, "4")
    assert choose_device("auto", 3, None)[0] == "cuda:3"
    assert choose_device("cuda:1", 1, None)[0] == "cuda:2"
    monkeypatch.setenv(VISIBLE_GPUS_ENV, "1")  # srun --gpus-per-task=1: one GPU each
    assert choose_device("auto", 5, None)[0] == "cuda:0"
    monkeypatch.setenv(VISIBLE_GPUS_ENV, "0")
    assert choose_device("auto", 1, None) == ("cpu", "cpu")
    # a plan from the driver wins; pretended GPUs compute on the CPU
    assert choose_device("auto", 0, "cuda:1") == ("cuda:1", "cpu")
