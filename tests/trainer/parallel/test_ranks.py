"""Two trainer ranks (DDP and FSDP2 on gloo) train exactly what one process trains: same
seed and batch, weights equal within float tolerance after two steps, full and LoRA;
a step with fewer micro-batches than ranks (empty passes) too."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reinforge.core import Experience
from reinforge.trainer.parallel.ranked_trainer import RankedTrainer
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

#: Adam divides by the gradient's running RMS, so float noise in tiny gradients moves
#: weights by up to ~lr x 0.02 between summation orders; a lost or doubled micro-batch
#: moves them by ~lr
TOLERANCE = 1e-4


def config(strategy: str | None, lora: bool = False, **extra: Any) -> TrainerConfig:
    data: dict[str, Any] = {
        "algorithm": "grpo",
        "lr": 1e-2 if lora else 1e-3,
        "micro_batch_size": 3,
        "lora": {"enabled": lora, "r": 4, "alpha": 8},
        # the full fine-tunes recompute activations, as the demo does (non-reentrant
        # checkpointing on the ranks, HF's default in one process)
        "gradient_checkpointing": not lora,
        **extra,
    }
    if strategy is not None:
        data["parallel"] = {"world_size": 2, "strategy": strategy, "timeout_s": 300}
    return TrainerConfig.model_validate(data)


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
@pytest.mark.parametrize("strategy", ["ddp", "fsdp2"])
def test_two_ranks_train_what_one_process_trains(
    strategy: str,
    lora: bool,
    tiny_model_path: Path,
    rank_batch: list[Experience],
    train_single: Callable,
    max_difference: Callable,
) -> None:
    pad = 0
    single, single_metrics = train_single(tiny_model_path, config(None, lora), rank_batch, 2, pad)
    base = Trainer(tiny_model_path, config(None, lora), pad_token_id=pad).weights_for_sync()
    progress: list[tuple[int, int]] = []
    with RankedTrainer(tiny_model_path, config(strategy, lora), pad_token_id=pad) as ranked:
        metrics = [
            ranked.train_step(
                copy.deepcopy(rank_batch), on_micro_batch=lambda k, n: progress.append((k, n))
            ).metrics
            for _ in range(2)
        ]
        weights = ranked.weights_for_sync()
        assert (ranked.global_step, ranked.model_version) == (2, 2)
    expected = single.weights_for_sync()
    assert max_difference(weights, base) > 10 * TOLERANCE  # it trained at all
    assert max_difference(weights, expected) < TOLERANCE
    # 16 experiences in 6 micro-batches of 3: 3 passes on each rank, reported by rank 0
    assert progress[:3] == [(1, 3), (2, 3), (3, 3)]
    for name in ("train/loss", "train/grad_norm", "train/tokens", "train/experiences"):
        assert metrics[1][name] == pytest.approx(single_metrics[1][name], rel=1e-3, abs=1e-5)
    assert metrics[1]["train/world_size"] == 2.0 and single_metrics[1]["train/world_size"] == 1.0
    assert metrics[1]["train/rank_update_time_max"] >= metrics[1]["train/rank_update_time_min"] > 0


def test_a_rank_without_a_micro_batch_runs_empty_passes(
    tiny_model_path: Path,
    rank_batch: list[Experience],
    train_single: Callable,
    max_difference: Callable,
) -> None:
    """One micro-batch for two ranks: rank 1 only joins FSDP2's gathers and reductions."""
    exps = rank_batch[:4]
    single, _ = train_single(tiny_model_path, config(None, micro_batch_size=8), exps, 1, 0)
    with RankedTrainer(
        tiny_model_path, config("fsdp2", micro_batch_size=8), pad_token_id=0
    ) as ranked:
        ranked.train_step(copy.deepcopy(exps))
        weights = ranked.weights_for_sync()
    assert max_difference(weights, single.weights_for_sync()) < TOLERANCE
