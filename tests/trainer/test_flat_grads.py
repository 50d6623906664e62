"""A CPU trainer in one process keeps a step's gradients in one buffer
(``flat_grads.py``): the same step, the same weights, and one block to free."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from torch import nn

from reinforge.trainer import learner as learner_module
from reinforge.trainer.flat_grads import FlatGradients
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig


def test_gradients_are_zero_views_of_one_buffer_per_dtype() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2).double())
    frozen = nn.Parameter(torch.ones(2), requires_grad=False)
    had = nn.Parameter(torch.ones(2))
    had.grad = torch.full_like(had, 5.0)
    params = [*model.parameters(), frozen, had]

    allocated = FlatGradients(params).nbytes

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
    FlatGradients([a, b])
    a.grad += 1.0
    assert not b.grad.any()


class _OneTensorEach:
    """In the learner's place of ``FlatGradients``: autograd allocates each gradient."""

    def __init__(self, params: Any) -> None:
        pass

    def drop_unused(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_parameter_no_backward_reached_is_skipped_by_the_optimiser() -> None:
    """An unused layer keeps no zero gradient, so AdamW (with weight decay) leaves it and
    its state alone, as when its ``.grad`` stayed None; a gradient written straight into
    ``.grad`` (the fused head's way) is kept, and so is a reached gradient of zeros."""
    used, unused, written = nn.Linear(2, 2), nn.Linear(2, 2), nn.Parameter(torch.ones(3))
    zero = nn.Parameter(torch.ones(2))
    params = [*used.parameters(), *unused.parameters(), written, zero]
    before = [p.detach().clone() for p in params]
    optimizer = torch.optim.AdamW(params, lr=0.1, weight_decay=0.5)
    flat = FlatGradients(params)
    (used(torch.ones(1, 2)).sum() + (zero * 0.0).sum()).backward()
    written.grad += 1.0
    flat.drop_unused()
    assert all(p.grad is None for p in unused.parameters())
    assert written.grad is not None and zero.grad is not None
    optimizer.step()
    for p, old in zip(params, before, strict=True):
        moved = not torch.equal(p.detach(), old)
        assert moved == (p not in set(unused.parameters())), p
    assert all(p not in optimizer.state for p in unused.parameters())


@pytest.mark.parametrize("precision", ["no", "bf16"])
def test_a_step_on_one_buffer_ends_at_the_weights_of_a_step_without_it(
    precision: str,
    tiny_model_path: Any,
    two_groups_of_four: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two GRPO steps of two micro-batches each (clipping, AdamW), bit for bit; the
    optimiser saw every gradient in one storage, and none is kept after the step."""
    exps = two_groups_of_four(seed=3)
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
            monkeypatch.setattr(learner_module, "FlatGradients", _OneTensorEach)
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

    start = {
        n: p.detach().clone()
        for n, p in Trainer(tiny_model_path, cfg, pad_token_id=2).model.named_parameters()
    }
    flat, flat_storages = run(True)
    separate, separate_storages = run(False)
    assert all(not torch.equal(flat[n], start[n]) for n in start)  # every weight stepped
    assert flat_storages == [1, 1]
    assert min(separate_storages) > 10
    for name, value in separate.items():
        assert torch.equal(flat[name], value), name
