"""Every loss aggregation mode on a hand-checked 3x3 example (third row empty)."""

import pytest
import torch

from reinforge.algorithms import LOSS_AGG_MODES, aggregate_loss

LOSS = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
MASK = torch.tensor([[1, 1, 0], [1, 0, 0], [0, 0, 0]], dtype=torch.bool)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("token-mean", (1 + 2 + 4) / 3),  # 3 valid tokens
        ("seq-mean-token-sum", (3 + 4) / 2),  # 2 non-empty sequences
        ("seq-mean-token-mean", (1.5 + 4) / 2),
        ("seq-mean-token-sum-norm", 7 / (3 * 3)),  # all B=3 rows, horizon T=3
    ],
)
def test_modes(mode: str, expected: float) -> None:
    assert aggregate_loss(LOSS, MASK, mode).item() == pytest.approx(expected)


def test_norm_mode_uses_fixed_horizon() -> None:
    assert aggregate_loss(LOSS, MASK, "seq-mean-token-sum-norm", horizon=7).item() == (
        pytest.approx(7 / (3 * 7))
    )


@pytest.mark.parametrize("mode", LOSS_AGG_MODES)
def test_empty_mask_gives_zero_with_gradient(mode: str) -> None:
    loss_mat = LOSS.clone().requires_grad_(True)
    loss = aggregate_loss(loss_mat, torch.zeros_like(MASK), mode)
    loss.backward()
    assert loss.item() == 0.0
    assert torch.equal(loss_mat.grad, torch.zeros_like(LOSS))


def test_token_mean_gradient_weights_every_token_equally() -> None:
    loss_mat = LOSS.clone().requires_grad_(True)
    aggregate_loss(loss_mat, MASK, "token-mean").backward()
    expected = torch.tensor([[1 / 3, 1 / 3, 0.0], [1 / 3, 0.0, 0.0], [0.0, 0.0, 0.0]])
    assert torch.allclose(loss_mat.grad, expected)


def test_unknown_mode_and_shape_mismatch() -> None:
    with pytest.raises(ValueError, match="token-mean"):
        aggregate_loss(LOSS, MASK, "seq-sum")
    with pytest.raises(ValueError, match="matching"):
        aggregate_loss(LOSS, MASK[:, :2], "token-mean")
