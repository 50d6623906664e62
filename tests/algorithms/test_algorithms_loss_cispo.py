"""CISPO: clipped, detached IS weights times −A · log π; clipped tokens keep gradient."""

import math

import pytest
import torch

from reinforge.algorithms import cispo_policy_loss

LOGP = [-1.0, -2.0, -0.5]
RATIOS = [1.5, 0.5, 1.0]
ADV = torch.tensor([[1.0, 1.0, -1.0]])


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    logp = torch.tensor([LOGP]).requires_grad_(True)
    old = torch.tensor([[lp - math.log(r) for lp, r in zip(LOGP, RATIOS, strict=True)]])
    return logp, old


def test_weights_clipped_on_both_sides() -> None:
    logp, old = _inputs()
    loss, metrics = cispo_policy_loss(logp, old, ADV, torch.ones(1, 3), eps_low=0.2, eps_high=0.28)
    # weights [1.28, 0.8, 1.0]; per token −A·w·logp = [1.28, 1.6, −0.5]
    assert loss.item() == pytest.approx((1.28 + 1.6 - 0.5) / 3)
    assert metrics["policy/clip_frac"] == pytest.approx(2 / 3)
    loss.backward()
    assert logp.grad[0].tolist() == pytest.approx([-1.28 / 3, -0.8 / 3, 1.0 / 3])


def test_default_has_no_effective_lower_bound() -> None:
    logp, old = _inputs()
    loss, metrics = cispo_policy_loss(logp, old, ADV, torch.ones(1, 3))
    # weights [1.28, 0.5, 1.0]
    assert loss.item() == pytest.approx((1.28 + 1.0 - 0.5) / 3)
    assert metrics["policy/clip_frac"] == pytest.approx(1 / 3)
