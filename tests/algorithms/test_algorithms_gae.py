"""GAE against hand-unrolled recursions."""

import pytest
import torch

from reinforge.algorithms import compute_gae

REWARDS = torch.tensor([[0.0, 0.0, 1.0]])
VALUES = torch.tensor([[0.5, 0.6, 0.7]])


def test_gamma_lambda_one_is_return_minus_value() -> None:
    adv, ret = compute_gae(REWARDS, VALUES, torch.ones(1, 3), gamma=1.0, lam=1.0)
    assert adv.tolist()[0] == pytest.approx([0.5, 0.4, 0.3])
    assert ret.tolist()[0] == pytest.approx([1.0, 1.0, 1.0])


def test_general_gamma_lambda() -> None:
    adv, ret = compute_gae(REWARDS, VALUES, torch.ones(1, 3), gamma=0.9, lam=0.8)
    # δ2 = 1 − 0.7 = 0.3; δ1 = 0.9·0.7 − 0.6 = 0.03; δ0 = 0.9·0.6 − 0.5 = 0.04; γλ = 0.72
    a2 = 0.3
    a1 = 0.03 + 0.72 * a2
    a0 = 0.04 + 0.72 * a1
    assert adv.tolist()[0] == pytest.approx([a0, a1, a2])
    assert ret.tolist()[0] == pytest.approx([a0 + 0.5, a1 + 0.6, a2 + 0.7])


def test_masked_positions_are_skipped() -> None:
    rewards = torch.tensor([[0.0, 5.0, 0.0, 1.0]])
    values = torch.tensor([[0.5, 9.0, 0.6, 0.7]])
    adv, ret = compute_gae(rewards, values, torch.tensor([[1, 0, 1, 1]]), gamma=0.9, lam=0.8)
    a1 = 0.03 + 0.72 * 0.3
    assert adv.tolist()[0] == pytest.approx([0.04 + 0.72 * a1, 0.0, a1, 0.3])
    assert ret[0, 1].item() == 0.0
