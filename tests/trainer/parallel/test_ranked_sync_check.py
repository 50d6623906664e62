"""The weight check after a sync from a trainer on ranks (2 gloo ranks into an hf engine).

The driver holds no model: the trainer's side of the probe is a ``probe_logprobs``
command every rank runs (under FSDP2 the forward's parameter gathers are collectives),
asked before the weights stream. A sync that drops one tensor on its way from the
ranks is caught; a correct one passes within the fp32 tolerance.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reinforge.core import Experience
from reinforge.models.engines.hf import HFEngine
from reinforge.trainer.parallel.ranked_trainer import RankedTrainer
from reinforge.trainer.sync_check import (
    TOLERANCES,
    WeightCheck,
    WeightCheckError,
    probe_ids,
    trainer_logprobs,
)
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig
from reinforge.trainer.weight_sync import sync_in_process

SKIPPED = "model.norm.weight"


@pytest.mark.parametrize("strategy", ["ddp", "fsdp2"])
def test_a_ranked_trainers_sync_is_checked(
    strategy: str,
    tiny_model_path: Path,
    tiny_model_and_tokenizer: tuple[Any, Any],
    rank_batch: list[Experience],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model, tokenizer = tiny_model_and_tokenizer
    data: dict[str, Any] = {"algorithm": "grpo", "lr": 1e-3, "micro_batch_size": 4}
    cfg = TrainerConfig.model_validate(
        {**data, "parallel": {"world_size": 2, "strategy": strategy, "timeout_s": 300}}
    )
    with (
        RankedTrainer(tiny_model_path, cfg, pad_token_id=0) as ranked,
        HFEngine(model=copy.deepcopy(model), tokenizer=tokenizer, device="cpu") as engine,
    ):
        ids, _ = probe_ids(tokenizer)
        one = Trainer(tiny_model_path, TrainerConfig.model_validate(data), pad_token_id=0)
        expected = trainer_logprobs(one, ids)  # one process, the same base weights
        assert ranked.probe_logprobs(ids) == pytest.approx(expected, abs=1e-5)
        assert not ranked.train_step(copy.deepcopy(rank_batch)).skipped
        real = ranked.weight_buckets

        def dropping(bucket_bytes: int) -> Iterator[dict[str, Any]]:
            for bucket in real(bucket_bytes):  # the ranks' real stream, one tensor lost
                yield {k: v for k, v in bucket.items() if k != SKIPPED}

        monkeypatch.setattr(ranked, "weight_buckets", dropping)
        with pytest.raises(WeightCheckError, match="version 1: the hf engine's replica 0"):
            sync_in_process(ranked, engine, WeightCheck())
        monkeypatch.undo()
        assert not ranked.train_step(copy.deepcopy(rank_batch)).skipped
        check = WeightCheck()
        assert sync_in_process(ranked, engine, check) == 2 == engine.model_version
        assert 0.0 <= check.last_gaps["replica 0"] <= TOLERANCES[("hf", "float32")]
