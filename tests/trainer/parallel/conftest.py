"""Experiences sampled from the tiny model, shared by the multi-rank tests."""

from __future__ import annotations

from typing import Any

import pytest

from reinforge.core import Experience
from reinforge.core.eid import EID
from reinforge.models.engines.hf import HFEngine
from reinforge.models.model_wrapper import ModelWrapper

PROMPTS = ["The cat sat on", "Numbers: one two", "Hello there", "A B C"]


@pytest.fixture(scope="session")
def rank_batch(tiny_model_and_tokenizer: tuple[Any, Any]) -> list[Experience]:
    """4 tasks x 4 samples with rollout log-probs and a reward spread in every group."""
    model, tokenizer = tiny_model_and_tokenizer
    with HFEngine(model=model, tokenizer=tokenizer, device="cpu", seed=3) as engine:
        exps = ModelWrapper(engine).generate(PROMPTS, n=4, max_tokens=6)
    for i, exp in enumerate(exps):
        task, run = divmod(i, 4)
        exp.eid = EID(batch=1, task=task, run=run)
        exp.reward = float(run % 2)
    return exps
