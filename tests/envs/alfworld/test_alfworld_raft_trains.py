"""What the RAFT ALFWorld workflows keep is trained by the SFT loss: with the tiny model's
tokenizer behind a scripted mock policy, a kept (spliced) retry and a discarded run go to
a ``sft`` trainer step on the tiny model; only the kept one trains, and the weights move."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import torch

from reinforge.core import Task
from reinforge.core.eid import EID
from reinforge.models.engines.mock import MockEngine
from reinforge.models.model_wrapper import ModelWrapper
from reinforge.models.tokenizer import HFChatTokenizer
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

# the real engine (the alfworld extra): without it skipped, failed under CI (tests/conftest.py)
pytestmark = pytest.mark.needs("alfworld")

GAME = "pick_cool_then_place_in_recep-2"


def test_kept_trajectories_train_with_the_sft_loss(player, tiny_model_path: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = HFChatTokenizer(AutoTokenizer.from_pretrained(str(tiny_model_path)))
    exps = []
    for run, mode in enumerate(("repeat_then_win", "repeat")):
        engine = MockEngine(replies=player(mode, "raft"), tokenizer=tokenizer, max_model_len=65536)
        model = ModelWrapper(engine, enable_history=True)
        task = Task(workflow="RAFT_reflect_alfworld_workflow", raw_task={"game": GAME})
        (exp,) = asyncio.run(task.to_workflow(model).run_async())
        exp.eid = EID(batch=1, task=0, run=run)
        exps.append(exp)
    kept, dropped = exps
    assert kept.info["raft_kept"] and not dropped.info["raft_kept"]
    assert kept.info["spliced"] and kept.action_mask.any() and not dropped.action_mask.any()

    config = TrainerConfig.model_validate({"algorithm": "sft", "lr": 1e-3, "micro_batch_size": 4})
    trainer = Trainer(tiny_model_path, config, pad_token_id=2)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    metrics = trainer.train_step(exps).metrics
    assert metrics["train/experiences"] == 1.0  # the discarded run has nothing to train on
    assert metrics["train/tokens"] == float(kept.action_mask.sum())
    after = dict(trainer.model.named_parameters())
    assert any(not torch.equal(before[n], after[n].detach()) for n in before)
