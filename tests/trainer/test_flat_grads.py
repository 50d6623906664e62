"""A CPU trainer in one process keeps a step's gradients in one buffer
(``flat_grads.py``): the same step, the same weights, and one block to free."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from torch import nn

from reinforge.core import Experience
from reinforge.core.eid import EID
from reinforge.trainer import learner as learner_module
from reinforge.trainer.flat_grads import flat_gradients
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig


def test_gradients_are_zero_views_of_one_buffer_per_dtype() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2).double())
    frozen = nn.Parameter(torch.ones(2), requires_grad=False)
    had = nn.Parameter(torch.ones(2))
    had.grad = torch.full_like(had, 5.0)
    params = [*model.parameters(), frozen, had]

    allocated = flat_gradients(params)

    floats = [p.grad for p in model[0].parameters()]
    doubles = [p.grad for p in model[1].parameters()]
    assert allocated == 4 * (12 + 4) + 8 * (8 + 2)
    for group in (floats, doubles):
        assert len({g.untyped_storage().data_ptr() for g in group}) == 1
    assert floats[0].untyped_storage().data_ptr() != doubles[0].untyped_storage().data_ptr()
    for p in model.parameters():
        assert p.grad.shape == p.shape and p.grad.dtype == p.dtype
        assert not p.grad.any()
    assert frozen.grad is None
    assert torch.equal(had.grad, torch.full_like(had, 5.0))  # not replaced


def test_views_do_not_overlap() -> None:
    a, b = nn.Parameter(torch.zeros(3)), nn.Parameter(torch.zeros(2, 2))
    flat_gradients([a, b])
    a.grad += 1.0
    assert not b.grad.any()


def _experiences() -> list[Experience]:
    gen = torch.Generator().manual_seed(3)
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


@pytest.mark.parametrize("precision", ["no", "bf16"])
def test_a_step_on_one_buffer_ends_at_the_weights_of_a_step_without_it(
    precision: str, tiny_model_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two GRPO steps of two micro-batches each (clipping, AdamW), bit for bit; the
    optimiser saw every gradient in one storage, and none is kept after the step."""
    exps = _experiences()
    cfg = TrainerConfig.model_validate(
        {
            "algorithm": "grpo",
            "lr": 1e-3,
            "micro_batch_size": 4,
            "warmup_steps": 0,
            "mixed_precision": precision,
        }
    )

    def run(flat: bool) -> tuple[dict[str, torch.Tensor], list[int]]:
        if not flat:
            monkeypatch.setattr(learner_module, "flat_gradients", lambda params: 0)
        trainer = Trainer(tiny_model_path, cfg, pad_token_id=2)
        storages: list[int] = []  # per optimiser step, the storages its gradients are in

        def record(*_: Any) -> None:
            grads = [p.grad for p in trainer.model.parameters() if p.grad is not None]
            storages.append(len({g.untyped_storage().data_ptr() for g in grads}))

        trainer.optimizer.register_step_pre_hook(record)
        for _ in range(2):
            trainer.train_step(copy.deepcopy(exps))
        assert all(p.grad is None for p in trainer.model.parameters())
        monkeypatch.undo()
        return {n: p.detach().clone() for n, p in trainer.model.named_parameters()}, storages

    flat, flat_storages = run(True)
    separate, separate_storages = run(False)
    assert flat_storages == [1, 1]
    assert min(separate_storages) > 10
    for name, value in separate.items():
        assert torch.equal(flat[name], value), name
