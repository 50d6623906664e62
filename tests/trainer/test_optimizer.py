"""The trainer's AdamW: torch's fused kernel where the parameters live on the CPU or a
GPU, stepping the weights as torch's per-parameter loop does."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from reinforge.trainer import optimizer as optimizer_module
from reinforge.trainer.optimizer import build_optimizer, fused_adamw_applies
from reinforge.trainer.trainer_config import TrainerConfig


def _model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Embedding(50, 12), torch.nn.Linear(12, 24), torch.nn.Linear(24, 50)
    )


def _train(model: torch.nn.Module, cfg: TrainerConfig, steps: int) -> list[torch.Tensor]:
    optimizer, scheduler = build_optimizer(model, cfg)
    gen = torch.Generator().manual_seed(1)
    for _ in range(steps):
        for p in model.parameters():
            p.grad = torch.randn(p.shape, generator=gen)
        optimizer.step()
        scheduler.step()
    return [p.detach().clone() for p in model.parameters()]


def test_the_trainers_adamw_is_fused_on_the_cpu() -> None:
    optimizer, _ = build_optimizer(_model(), TrainerConfig())
    assert all(group["fused"] for group in optimizer.param_groups)


def test_fused_adamw_steps_the_weights_as_the_per_parameter_loop_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg = TrainerConfig(lr=1e-2, warmup_steps=2, weight_decay=0.1)
    fused = _train(_model(), cfg, steps=4)
    monkeypatch.setattr(optimizer_module, "fused_adamw_applies", lambda params: False)
    looped = _train(_model(), cfg, steps=4)
    start = [p.detach() for p in _model().parameters()]
    for a, b, s in zip(fused, looped, start, strict=True):
        assert not torch.equal(a, s)  # the step moved the weights
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


def test_fused_adamw_needs_floating_parameters_on_a_device_with_the_kernel() -> None:
    assert fused_adamw_applies([torch.nn.Parameter(torch.zeros(3))])
    assert not fused_adamw_applies([])
    assert not fused_adamw_applies([torch.nn.Parameter(torch.zeros(3, device="meta"))])


def test_an_optimizer_state_saved_before_the_fused_kernel_resumes_where_it_left_off(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A checkpoint's optimizer state from a release that stepped with the loop loads
    into today's optimizer, and the next step is the one the old release would take."""
    cfg = TrainerConfig(lr=1e-2, warmup_steps=2, weight_decay=0.1)
    old_model = _model()
    with monkeypatch.context() as patch:
        patch.setattr(optimizer_module, "fused_adamw_applies", lambda params: False)
        old, _ = build_optimizer(old_model, cfg)
    for p in old_model.parameters():
        p.grad = torch.full_like(p, 0.5)
    old.step()
    torch.save(old.state_dict(), tmp_path / "optim.pt")
    saved_weights = {k: v.clone() for k, v in old_model.state_dict().items()}
    old.step()  # the step the old release takes next

    model = _model()
    model.load_state_dict(saved_weights)
    resumed, _ = build_optimizer(model, cfg)
    resumed.load_state_dict(torch.load(tmp_path / "optim.pt"))
    for p in model.parameters():
        p.grad = torch.full_like(p, 0.5)
    resumed.step()
    for a, b in zip(model.parameters(), old_model.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
