"""OPMD policy loss: −A · log π scaled by 1 / (1 + τ), no importance ratio."""

import pytest
import torch

from reinforge.algorithms import opmd_policy_loss


@pytest.mark.parametrize(("tau", "expected"), [(1.0, -0.25), (0.5, -0.5 / 1.5)])
def test_scaled_policy_gradient(tau: float, expected: float) -> None:
    logp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    loss, _ = opmd_policy_loss(logp, None, torch.tensor([[1.0, -1.0]]), torch.ones(1, 2), tau=tau)
    # −A·logp = [1, −2], token-mean −0.5
    assert loss.item() == pytest.approx(expected)
    loss.backward()
    assert logp.grad[0].tolist() == pytest.approx([-0.5 / (1 + tau), 0.5 / (1 + tau)])
