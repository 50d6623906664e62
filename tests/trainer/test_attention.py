"""The trainer's per-micro-batch choice of attention kernel (eager vs SDPA)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import torch

from reinforge.core import Experience
from reinforge.core.eid import EID
from reinforge.models.engines.hf import HFEngine
from reinforge.models.model_wrapper import ModelWrapper
from reinforge.trainer.attention import EAGER_MAX_COLUMNS, pick_attention
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig


def test_auto_picks_eager_for_short_cpu_batches_only():
    assert pick_attention("auto", "cpu", 80) == "eager"
    assert pick_attention("auto", "cpu", EAGER_MAX_COLUMNS) == "eager"
    assert pick_attention("auto", "cpu", EAGER_MAX_COLUMNS + 1) == "sdpa"
    assert pick_attention("auto", "cuda", 80) == "sdpa"
    assert pick_attention("sdpa", "cpu", 80) == "sdpa"
    assert pick_attention("eager", "cuda", 4096) == "eager"


def test_unknown_setting_is_a_config_error():
    with pytest.raises(ValueError, match="attn_implementation"):
        TrainerConfig.model_validate({"attn_implementation": "flash"})


@pytest.fixture(scope="module")
def sampled(tiny_model_and_tokenizer: tuple[Any, Any]) -> list[Experience]:
    model, tokenizer = tiny_model_and_tokenizer
    with HFEngine(model=model, tokenizer=tokenizer, device="cpu", seed=5) as engine:
        exps = ModelWrapper(engine).generate(["The cat sat on", "One two"], n=4, max_tokens=6)
    for i, exp in enumerate(exps):
        exp.eid = EID(batch=1, task=i // 4, run=i % 4)
        exp.reward = float(i % 2)
    return exps


def _step(path: Path, exps: list[Experience], attention: str) -> tuple[Trainer, dict]:
    cfg = TrainerConfig.model_validate(
        {"algorithm": "grpo", "lr": 1e-3, "micro_batch_size": 4, "attn_implementation": attention}
    )
    trainer = Trainer(path, cfg, pad_token_id=2)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    metrics = trainer.train_step(copy.deepcopy(exps)).metrics
    # the step trained: without it, two equal steps would be two untouched models
    assert any(
        not torch.equal(a, b) for a, b in zip(before, trainer.model.parameters(), strict=True)
    )
    return trainer, metrics


def test_auto_trains_with_eager_and_takes_the_same_step_as_sdpa(
    sampled: list[Experience], tiny_model_path: Path
):
    auto, m_auto = _step(tiny_model_path, sampled, "auto")
    sdpa, m_sdpa = _step(tiny_model_path, sampled, "sdpa")
    assert auto.model.config._attn_implementation == "eager"
    assert auto.ref_model.config._attn_implementation == "eager"
    assert sdpa.model.config._attn_implementation == "sdpa"
    # both kernels compute the same attention: on-policy ratio 1, the same update
    assert m_auto["train/sampler/ratio_mean"] == pytest.approx(1.0, abs=1e-3)
    assert m_auto["train/loss"] == pytest.approx(m_sdpa["train/loss"], abs=1e-5)
    # Adam's first step moves each weight by about lr * g / (|g| + eps): where a gradient
    # element is near zero, the two kernels' last-bit differences change its update by
    # ~1e-5 (seen: 1.08e-5 on one of 8192 weights); 1e-4 is a tenth of a step (lr 1e-3),
    # while the loss above pins the kernels to 1e-5
    for a, b in zip(auto.model.parameters(), sdpa.model.parameters(), strict=True):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=0)
