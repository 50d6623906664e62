"""Experiences sampled from the tiny model, the driver side of ranks a launcher starts,
and the one-process reference that ranks are compared with, shared by the multi-rank
tests. (Helpers travel as fixtures: under pytest's importlib import mode a test module
cannot import another.)"""

from __future__ import annotations

import copy
import os
import secrets
from collections.abc import Callable, Iterator
from multiprocessing.connection import Listener
from pathlib import Path
from typing import Any

import pytest
import torch

from reinforge.core import Experience
from reinforge.core.eid import EID
from reinforge.models.engines.hf import HFEngine
from reinforge.models.model_wrapper import ModelWrapper
from reinforge.trainer.parallel.rank_worker import AUTHKEY_ENV, DRIVER_ENV
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

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


def _train_single(
    path: Path, cfg: TrainerConfig, exps: list[Experience], steps: int, pad: int
) -> tuple[Trainer, list[dict[str, Any]]]:
    trainer = Trainer(path, cfg, pad_token_id=pad)
    metrics = [trainer.train_step(copy.deepcopy(exps)).metrics for _ in range(steps)]
    return trainer, metrics


def _max_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


@pytest.fixture
def train_single() -> Callable[..., tuple[Trainer, list[dict[str, Any]]]]:
    """``(model_path, config, experiences, steps, pad_token_id)``: one in-process
    trainer trained ``steps`` times on copies of the same experiences, and each step's
    metrics: what ranks must reproduce."""
    return _train_single


@pytest.fixture
def max_difference() -> Callable[[dict[str, torch.Tensor], dict[str, torch.Tensor]], float]:
    """The largest absolute difference between two state dicts with the same names."""
    return _max_difference
