"""SFT negative log-likelihood ignores advantages and old log-probs."""

import pytest
import torch

from reinforge.algorithms import POLICY_LOSS_FNS, sft_loss

LOGP = torch.tensor([[-1.0, -2.0, -3.0], [-0.5, -9.0, -9.0]])
MASK = torch.tensor([[1, 1, 0], [1, 0, 0]])


def test_token_mean_nll() -> None:
    loss, metrics = sft_loss(LOGP, None, None, MASK)
    assert loss.item() == pytest.approx((1 + 2 + 0.5) / 3)
    assert metrics["sft/loss"] == pytest.approx(loss.item())


def test_seq_mean_token_mean_and_registry() -> None:
    loss, _ = POLICY_LOSS_FNS.get("sft")(
        LOGP, torch.zeros(2, 3), torch.ones(2, 3), MASK, loss_agg_mode="seq-mean-token-mean"
    )
    assert loss.item() == pytest.approx((1.5 + 0.5) / 2)
