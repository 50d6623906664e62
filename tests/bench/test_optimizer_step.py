"""bench/optimizer_step.py: each side steps with the optimizer it names, and the
trainer's own choice is left as it was."""

from __future__ import annotations

import optimizer_step  # bench/ is on sys.path (tests/bench/conftest.py)
import pytest
import torch

from reinforge.trainer import optimizer as optimizer_module


def test_each_side_builds_the_optimizer_it_names(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[bool] = []
    real = optimizer_module.build_optimizer

    def record(model, cfg):
        optimizer, scheduler = real(model, cfg)
        built.append(bool(optimizer.param_groups[0]["fused"]))
        return optimizer, scheduler

    monkeypatch.setattr(optimizer_module, "build_optimizer", record)
    model = torch.nn.Linear(8, 8)
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    assert optimizer_step.time_steps(model, fused=False, steps=1) > 0
    assert optimizer_step.time_steps(model, fused=True, steps=1) > 0
    assert built == [False, True]
    assert optimizer_module.fused_adamw_applies(list(model.parameters()))  # restored
