"""Masked reductions, checked by hand on a 2x3 example with garbage in the padding."""

import math

import pytest
import torch

from reinforge.algorithms import masked_mean, masked_sum, masked_var, masked_whiten

VALUES = torch.tensor([[1.0, 2.0, 3.0], [4.0, float("nan"), float("inf")]])
MASK = torch.tensor([[1, 1, 0], [1, 0, 0]], dtype=torch.bool)


def test_sum_and_mean_ignore_padding_garbage() -> None:
    assert masked_sum(VALUES, MASK).item() == pytest.approx(7.0)
    assert masked_mean(VALUES, MASK).item() == pytest.approx(7.0 / 3.0)
    assert masked_mean(VALUES, MASK, dim=-1).tolist() == pytest.approx([1.5, 4.0])


def test_mean_of_empty_mask_is_zero() -> None:
    assert masked_mean(VALUES, torch.zeros_like(MASK)).item() == 0.0


def test_var_is_bessel_corrected() -> None:
    # entries 1, 2, 4: mean 7/3, squared deviations 16/9 + 1/9 + 25/9 = 42/9, / (3 - 1)
    assert masked_var(VALUES, MASK).item() == pytest.approx(21.0 / 9.0)
    assert masked_var(VALUES, MASK, unbiased=False).item() == pytest.approx(14.0 / 9.0)
    single = torch.tensor([[1, 0, 0], [0, 0, 0]], dtype=torch.bool)
    assert masked_var(VALUES, single).item() == 0.0


def test_whiten() -> None:
    out = masked_whiten(VALUES, MASK, epsilon=0.0)
    std = math.sqrt(21.0 / 9.0)
    expected = [[(1 - 7 / 3) / std, (2 - 7 / 3) / std, 0.0], [(4 - 7 / 3) / std, 0.0, 0.0]]
    assert out.tolist()[0] == pytest.approx(expected[0])
    assert out.tolist()[1] == pytest.approx(expected[1])
