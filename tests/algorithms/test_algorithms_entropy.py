"""Entropy from logits: uniform = log V, a known distribution, stability, −inf entries."""

import math

import pytest
import torch

from reinforge.algorithms import entropy_bonus, entropy_from_logits


def test_uniform_distribution_has_entropy_log_v() -> None:
    out = entropy_from_logits(torch.zeros(2, 3, 5))
    assert out.shape == (2, 3)
    assert torch.allclose(out, torch.full((2, 3), math.log(5)))


def test_known_distribution() -> None:
    logits = torch.log(torch.tensor([0.5, 0.25, 0.25]))
    assert entropy_from_logits(logits).item() == pytest.approx(1.5 * math.log(2))


def test_large_logits_and_masked_vocab_stay_finite() -> None:
    assert entropy_from_logits(torch.tensor([1000.0, 1000.0])).item() == pytest.approx(math.log(2))
    assert entropy_from_logits(torch.tensor([0.0, float("-inf")])).item() == 0.0


def test_bonus_is_negative_coef_times_mean_entropy() -> None:
    logits = torch.zeros(1, 2, 4)
    logits[0, 1] = torch.tensor([100.0, 0.0, 0.0, 0.0])  # masked out below
    loss, metrics = entropy_bonus(logits, torch.tensor([[1, 0]]), coef=0.1)
    assert loss.item() == pytest.approx(-0.1 * math.log(4))
    assert metrics["entropy/value"] == pytest.approx(math.log(4))
