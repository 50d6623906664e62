"""Discounted reward-to-go with skipped (non-action) positions."""

import pytest
import torch

from reinforge.algorithms import discounted_returns


def test_discounting() -> None:
    out = discounted_returns(torch.tensor([[1.0, 2.0, 3.0]]), torch.ones(1, 3), gamma=0.5)
    # G2 = 3, G1 = 2 + 0.5·3 = 3.5, G0 = 1 + 0.5·3.5 = 2.75
    assert out.tolist()[0] == pytest.approx([2.75, 3.5, 3.0])


def test_unmasked_positions_are_not_time_steps() -> None:
    out = discounted_returns(torch.tensor([[1.0, 2.0, 3.0]]), torch.tensor([[1, 0, 1]]), 0.5)
    # the middle token is skipped: G2 = 3, G0 = 1 + 0.5·3
    assert out.tolist()[0] == pytest.approx([2.5, 0.0, 3.0])
