"""Checkpoints move between one process and two ranks: saved on 1 (``optim.pt``) resumes
on 2; saved on 2 (``torch.distributed.checkpoint``) resumes on 2 and on 1; each resumed
trainer's next step equals the uninterrupted one-process run's."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import torch

from reinforge.core import Experience
from reinforge.trainer.parallel.ranked_trainer import RankedTrainer
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

TOLERANCE = 1e-4


def config(world_size: int) -> TrainerConfig:
    data: dict[str, Any] = {"algorithm": "grpo", "lr": 1e-3, "micro_batch_size": 3}
    if world_size > 1:
        data["parallel"] = {"world_size": world_size, "strategy": "fsdp2", "timeout_s": 300}
    return TrainerConfig.model_validate(data)


def difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def snapshot(trainer: Trainer) -> dict[str, torch.Tensor]:
    """A copy (an in-process trainer's sync weights are its live parameters)."""
    return {k: v.clone() for k, v in trainer.weights_for_sync().items()}


def test_checkpoints_resume_across_world_sizes(
    tiny_model_path: Path, rank_batch: list[Experience], tmp_path: Path
) -> None:
    def batch() -> list[Experience]:
        return copy.deepcopy(rank_batch)

    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    reference = Trainer(tiny_model_path, config(1), pad_token_id=0)
    reference.train_step(batch())
    saved_on_one = reference.save_checkpoint(one)
    at_one = snapshot(reference)
    assert (one / "optim.pt").is_file() and saved_on_one["world_size"] == 1
    after = []
    for _ in range(2):
        reference.train_step(batch())
        after.append(snapshot(reference))  # after steps 2 and 3

    with RankedTrainer(tiny_model_path, config(2), pad_token_id=0) as ranked:
        ranked.load_checkpoint(one, saved_on_one)  # 1 -> 2
        assert difference(ranked.weights_for_sync(), at_one) == 0.0
        ranked.train_step(batch())
        assert difference(ranked.weights_for_sync(), after[0]) < TOLERANCE
        saved_on_two = ranked.save_checkpoint(two)
        assert (two / "optim").is_dir() and (two / "model" / "model.safetensors").is_file()
        assert saved_on_two["world_size"] == 2 and saved_on_two["global_step"] == 2
        ranked.train_step(batch())
        ranked.load_checkpoint(two, saved_on_two)  # 2 -> 2: back to step 2
        assert ranked.global_step == 2
        ranked.train_step(batch())
        assert difference(ranked.weights_for_sync(), after[1]) < TOLERANCE

    resumed = Trainer(tiny_model_path, config(1), pad_token_id=0)
    resumed.load_checkpoint(two, saved_on_two)  # 2 -> 1
    assert resumed.global_step == 2
    resumed.train_step(batch())
    assert difference(resumed.weights_for_sync(), after[1]) < TOLERANCE
