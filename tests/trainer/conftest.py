"""Helpers shared by the trainer's tests."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from reinforge.core import Experience
from reinforge.core.eid import EID
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


class LiveTensorBytes(TorchDispatchMode):
    """Inside ``with``: the bytes of the tensors that torch ops made and that are still
    alive (``live``), and their highest total (``peak``). Tensors made before, such as
    the parameters, are not counted, nor is a view of them."""

    def __init__(self) -> None:
        super().__init__()
        self.live = 0
        self.peak = 0
        self._seen: set[int] = set()

    def _freed(self, key: int, size: int) -> None:
        self._seen.discard(key)
        self.live -= size

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {
            t.untyped_storage().data_ptr()
            for t in tree_flatten((args, kwargs))[0]
            if isinstance(t, torch.Tensor)
        }
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                storage = t.untyped_storage()
                key = storage.data_ptr()
                if key and key not in self._seen and key not in inputs:
                    self._seen.add(key)
                    self.live += storage.nbytes()
                    weakref.finalize(t, self._freed, key, storage.nbytes())
        self.peak = max(self.peak, self.live)
        return out


@pytest.fixture
def live_tensor_bytes() -> type[LiveTensorBytes]:
    """A dispatch mode that tracks the bytes of live tensors made under it."""
    return LiveTensorBytes


@pytest.fixture
def two_groups_of_four() -> Callable[[int], list[Experience]]:
    """``two_groups_of_four(seed)``: see ``_two_groups_of_four``."""
    return _two_groups_of_four


def _two_groups_of_four(seed: int) -> list[Experience]:
    """Two GRPO groups of four replies (3-6 tokens) to a 6-token prompt each, in the tiny
    model's vocabulary, with sampler log-probs and alternating rewards."""
    gen = torch.Generator().manual_seed(seed)
    exps = []
    for task in range(2):
        prompt = torch.randint(3, 1000, (6,), generator=gen)
        for run in range(4):
            reply = torch.randint(3, 1000, (3 + run,), generator=gen)
            exp = Experience(
                tokens=torch.cat([prompt, reply]),
                prompt_length=6,
                logprobs=-torch.rand(3 + run, generator=gen),
                reward=float(run % 2),
            )
            exp.eid = EID(batch=1, task=task, run=run)
            exp.info["model_version"] = 0
            exps.append(exp)
    return exps
