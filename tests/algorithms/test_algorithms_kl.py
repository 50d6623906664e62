"""KL estimators for π = 0.5, π_ref = 0.25 (log r = −log 2), and their two usages."""

import math

import pytest
import torch

from reinforge.algorithms import KL_KINDS, apply_kl_reward_penalty, kl_loss_term, kl_penalty

LOG2 = math.log(2.0)
LOGP = torch.tensor([math.log(0.5)])
REF = torch.tensor([math.log(0.25)])


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("none", 0.0),
        ("k1", LOG2),  # log π − log π_ref
        ("k2", 0.5 * LOG2**2),
        ("k3", 0.5 - 1.0 + LOG2),  # r − 1 − log r with r = 0.5
        ("low_var_kl", 0.5 - 1.0 + LOG2),
    ],
)
def test_kinds_on_known_pair(kind: str, expected: float) -> None:
    assert kl_penalty(LOGP, REF, kind).item() == pytest.approx(expected)


def test_equal_policies_have_zero_kl() -> None:
    for kind in KL_KINDS:
        assert kl_penalty(LOGP, LOGP, kind).item() == 0.0


def test_low_var_kl_is_clamped_but_k3_is_not() -> None:
    logp, ref = torch.tensor([-30.0]), torch.tensor([0.0])  # log r = 30
    assert kl_penalty(logp, ref, "low_var_kl").item() == 10.0
    assert kl_penalty(logp, ref, "k3").item() == pytest.approx(math.exp(30) - 31, rel=1e-5)


def test_unknown_kind() -> None:
    with pytest.raises(ValueError, match="low_var_kl"):
        kl_penalty(LOGP, REF, "k4")


def test_reward_penalty_subtracts_on_masked_tokens_only() -> None:
    rewards = torch.tensor([[0.0, 1.0]])
    logp = torch.tensor([[math.log(0.5), math.log(0.5)]])
    ref = torch.tensor([[math.log(0.25), math.log(0.5)]])
    out, metrics = apply_kl_reward_penalty(rewards, logp, ref, torch.ones(1, 2), "k1", 0.1)
    assert out.tolist()[0] == pytest.approx([-0.1 * LOG2, 1.0])
    assert metrics["kl_penalty/mean"] == pytest.approx(LOG2 / 2)
    out, _ = apply_kl_reward_penalty(rewards, logp, ref, torch.tensor([[0, 1]]), "k1", 0.1)
    assert out.tolist()[0] == pytest.approx([0.0, 1.0])


def test_loss_term_is_coef_times_aggregated_kl_with_gradient() -> None:
    logp = torch.tensor([[math.log(0.5), math.log(0.5)]], requires_grad=True)
    ref = torch.tensor([[math.log(0.25), math.log(0.5)]])
    loss, metrics = kl_loss_term(logp, ref, torch.ones(1, 2), "k1", coef=0.5)
    assert loss.item() == pytest.approx(0.5 * LOG2 / 2)  # token-mean of [log 2, 0]
    assert metrics["kl_loss/value"] == pytest.approx(LOG2 / 2)
    loss.backward()
    assert logp.grad.tolist()[0] == pytest.approx([0.25, 0.25])  # d(k1)/dlogp = 1, × 0.5 / 2
