"""The driver plans a step and each rank receives only its share, as tensors: about 1/N
of the step's tokens (within one micro-batch), never an ``Experience``, and 2 ranks
still train what one process trains."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from reinforge.algorithms import resolve_algorithm
from reinforge.core import Experience
from reinforge.trainer.handle import TrainerHandle
from reinforge.trainer.parallel.rank_worker import load_command
from reinforge.trainer.parallel.ranked_trainer import RankedTrainer
from reinforge.trainer.step_planner import StepPlanner
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

#: as in test_ranks.py: float noise between summation orders, far below a lost micro-batch
TOLERANCE = 1e-4


def config(strategy: str | None, **extra: Any) -> TrainerConfig:
    data: dict[str, Any] = {"algorithm": "grpo", "lr": 1e-3, **extra}
    if strategy is not None:
        data["parallel"] = {"world_size": 2, "strategy": strategy, "timeout_s": 300}
    return TrainerConfig.model_validate(data)


def test_each_rank_receives_about_its_share_of_the_tokens_as_tensors(
    tiny_model_path: Path,
    rank_batch: list[Experience],
    train_single: Callable,
    max_difference: Callable,
) -> None:
    # 16 experiences in micro-batches of 2: 8 micro-batches, 4 on each rank
    single, _ = train_single(tiny_model_path, config(None, micro_batch_size=2), rank_batch, 1, 0)
    cfg = config("ddp", micro_batch_size=2)
    whole = StepPlanner(cfg, resolve_algorithm("grpo"), pad_token_id=0, world_size=1).plan(
        copy.deepcopy(rank_batch), model_version=0
    )
    step = whole.shares[0]  # the whole step as one process's share
    largest = max(mb.tokens for mb in step.micro_batches)
    with RankedTrainer(tiny_model_path, cfg, pad_token_id=0) as ranked:
        assert isinstance(ranked, TrainerHandle)
        ranked.train_step(copy.deepcopy(rank_batch))
        receipts = ranked.receipts
        weights = ranked.weights_for_sync()
    assert [r["type"] for r in receipts] == ["RankShare", "RankShare"]
    tokens = [r["tokens"] for r in receipts]
    assert sum(tokens) == step.tokens == sum(len(e.tokens) for e in rank_batch)
    for got in tokens:
        assert abs(got - step.tokens / 2) <= largest, tokens
    # the bytes each rank received follow: about half of what the whole step pickles to
    step_bytes = len(pickle.dumps(step, protocol=pickle.HIGHEST_PROTOCOL))
    for received in (r["bytes"] for r in receipts):
        assert 0.3 * step_bytes < received < 0.7 * step_bytes, (received, step_bytes)
    assert max_difference(weights, single.weights_for_sync()) < TOLERANCE


def test_a_kl_penalty_in_the_reward_is_scored_by_the_ranks(
    tiny_model_path: Path,
    rank_batch: list[Experience],
    train_single: Callable,
    max_difference: Callable,
) -> None:
    """reinforce_plus_plus scores every row with the reference before its advantages:
    the driver sends each rank its part of the rows (3 micro-batches for 2 ranks, so
    one rank pairs the other's sharded reference forward with an empty one)."""
    extra = {"algorithm": "reinforce_plus_plus", "micro_batch_size": 6}
    single, single_metrics = train_single(tiny_model_path, config(None, **extra), rank_batch, 1, 0)
    with RankedTrainer(tiny_model_path, config("fsdp2", **extra), pad_token_id=0) as ranked:
        metrics = ranked.train_step(copy.deepcopy(rank_batch)).metrics
        weights = ranked.weights_for_sync()
    assert max_difference(weights, single.weights_for_sync()) < TOLERANCE
    # the returns hold the KL penalty: wrong reference log-probs would move them
    name = "train/return/mean"
    assert metrics[name] == pytest.approx(single_metrics[0][name], abs=1e-6)


def test_a_rank_refuses_an_experience(rank_batch: list[Experience]) -> None:
    """What a rank unpickles: a share passes, an experience anywhere in a command fails."""
    cfg = config(None)
    plan = StepPlanner(cfg, resolve_algorithm("grpo"), pad_token_id=0, world_size=2).plan(
        copy.deepcopy(rank_batch), model_version=0
    )
    name, share = load_command(pickle.dumps(("train_step", plan.shares[1])))
    assert (name, type(share).__name__) == ("train_step", "RankShare")
    with pytest.raises(pickle.UnpicklingError, match="ranks receive tensors only"):
        load_command(pickle.dumps(("train_step", (rank_batch[:1], None))))


def test_the_in_process_trainer_is_a_trainer_handle(tiny_model_path: Path) -> None:
    trainer = Trainer(tiny_model_path, config(None), pad_token_id=0)
    assert isinstance(trainer, TrainerHandle)
    assert (trainer.world_size, trainer.stopped) == (1, False)


def test_a_share_crosses_to_a_rank_with_the_same_tensors(rank_batch: list[Experience]) -> None:
    """Pickled for a rank, a micro-batch leaves behind what the rank rebuilds (the
    shared-prompt layout, the attention mask, the position ids) and gets it back equal."""
    from reinforge.trainer.shared_prompts import SharedPromptBatch

    plan = StepPlanner(config(None), resolve_algorithm("grpo"), pad_token_id=0, world_size=1).plan(
        copy.deepcopy(rank_batch), model_version=0
    )
    sent = plan.shares[0]
    assert any(isinstance(mb.batch, SharedPromptBatch) for mb in sent.micro_batches)
    raw = pickle.dumps(sent, protocol=pickle.HIGHEST_PROTOCOL)
    got = pickle.loads(raw)
    for before, after in zip(sent.micro_batches, got.micro_batches, strict=True):
        rebuilt = after.train_batch()
        for name, tensor in before.batch.tensors().items():
            assert torch.equal(rebuilt.tensors()[name], tensor), name
            assert rebuilt.tensors()[name].dtype == tensor.dtype, name
        layout, again = before.batch.packed, getattr(rebuilt, "packed", None)
        if layout is not None:
            assert again is not None and torch.equal(again.allowed, layout.allowed)
            assert torch.equal(again.src_pos, layout.src_pos)
    # the layout's attention mask (rows x width x width) and the int64 masks stay behind
    assert len(raw) < 0.5 * len(pickle.dumps([mb.batch for mb in sent.micro_batches]))
