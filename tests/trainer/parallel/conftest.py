"""Experiences sampled from the tiny model, and the driver side of ranks a launcher
starts, shared by the multi-rank tests."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from multiprocessing.connection import Listener
from typing import Any

import pytest

from reinforge.core import Experience
from reinforge.core.eid import EID
from reinforge.models.engines.hf import HFEngine
from reinforge.models.model_wrapper import ModelWrapper
from reinforge.trainer.parallel.rank_worker import AUTHKEY_ENV, DRIVER_ENV

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


@pytest.fixture
def rank_driver() -> Iterator[tuple[Listener, dict[str, str]]]:
    """A driver listening for launcher-started ranks, and the environment those ranks
    need to reach it (``$REINFORGE_DRIVER``, its key, one thread each)."""
    authkey = secrets.token_bytes(16)
    listener = Listener(("127.0.0.1", 0), authkey=authkey)
    host, port = listener.address
    env = {
        **os.environ,
        DRIVER_ENV: f"{host}:{port}",
        AUTHKEY_ENV: authkey.hex(),
        "OMP_NUM_THREADS": "1",
    }
    yield listener, env
