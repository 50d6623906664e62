"""GSPO: sequence-level geometric-mean ratio, per-sequence clipping, token gradients."""

import math

import pytest
import torch

from reinforge.algorithms import gspo_policy_loss


def _leaf(values: list[list[float]]) -> torch.Tensor:
    return torch.tensor(values).requires_grad_(True)


def test_sequence_ratio_is_geometric_mean_of_masked_tokens() -> None:
    old = torch.full((1, 3), -1.0)
    logp = _leaf([[-1.0 + math.log(1.2), -1.0 + math.log(0.8), 5.0]])  # 3rd token masked
    adv = torch.ones(1, 3)
    loss, metrics = gspo_policy_loss(
        logp, old, adv, torch.tensor([[1, 1, 0]]), clip_range_low=0.2, clip_range_high=0.2
    )
    s = math.sqrt(1.2 * 0.8)  # 0.979796
    assert loss.item() == pytest.approx(-s)
    assert metrics["policy/seq_ratio_mean"] == pytest.approx(s)
    loss.backward()
    # token-level gradient = −A · s / |y| on each valid token
    assert logp.grad[0].tolist() == pytest.approx([-s / 2, -s / 2, 0.0])


def test_token_form_gradient_matches_sequence_objective() -> None:
    old = torch.tensor([[-1.0, -2.0, -0.5]])
    start = [[-0.9, -2.2, -0.4]]
    logp = _leaf(start)
    gspo_policy_loss(logp, old, torch.full((1, 3), 0.7), torch.ones(1, 3), clip_range_high=1.0)[
        0
    ].backward()
    ref = _leaf(start)
    (-0.7 * torch.exp((ref - old).mean())).backward()  # sequence-level GSPO objective
    assert torch.allclose(logp.grad, ref.grad)


def test_whole_sequence_is_clipped() -> None:
    old = torch.zeros(1, 2)
    logp = _leaf([[math.log(1.1), math.log(1.1)]])  # s = 1.1 > 1 + 4e-4
    loss, metrics = gspo_policy_loss(logp, old, torch.ones(1, 2), torch.ones(1, 2))
    loss.backward()
    assert loss.item() == pytest.approx(-(1 + 4e-4))
    assert logp.grad.abs().sum().item() == 0.0
    assert metrics["policy/clip_frac"] == 1.0
    # a negative advantage is not clipped on the upper side
    logp = _leaf([[math.log(1.1), math.log(1.1)]])
    loss, _ = gspo_policy_loss(logp, old, -torch.ones(1, 2), torch.ones(1, 2))
    assert loss.item() == pytest.approx(1.1)


def test_per_token_advantages() -> None:
    logp = _leaf([[-1.0, -1.0]])
    loss, _ = gspo_policy_loss(logp, logp.detach(), torch.tensor([[2.0, 1.0]]), torch.ones(1, 2))
    loss.backward()
    assert loss.item() == pytest.approx(-1.5)
    assert logp.grad[0].tolist() == pytest.approx([-1.0, -0.5])
