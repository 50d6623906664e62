"""Helpers shared by the trainer's tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
import torch

from reinforge.core import Experience
from reinforge.trainer.trainer import Trainer

StepGradient = Callable[[Trainer, Sequence[Experience]], tuple[dict[str, torch.Tensor], dict]]


@pytest.fixture
def step_gradient() -> StepGradient:
    """``step_gradient(trainer, exps)``: one ``train_step`` on ``exps``; the (clipped)
    gradient the optimiser stepped with, by parameter name, and the step's metrics."""

    def run(trainer: Trainer, exps: Sequence[Experience]) -> tuple[dict, dict]:
        grads: dict[str, torch.Tensor] = {}

        def record(*_: Any) -> None:
            for name, p in trainer.model.named_parameters():
                if p.grad is not None:
                    grads[name] = p.grad.detach().clone()

        handle = trainer.optimizer.register_step_pre_hook(record)
        try:
            metrics = trainer.train_step(exps).metrics
        finally:
            handle.remove()
        return grads, metrics

    return run
