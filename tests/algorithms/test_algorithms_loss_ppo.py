"""PPO clipped surrogate: plain, clip-higher asymmetry, dual-clip, masking, metrics."""

import math

import pytest
import torch

from reinforge.algorithms import POLICY_LOSS_FNS, ppo_policy_loss


def _run(ratios: list[float], advs: list[float], mask: list[int] | None = None, **params):
    old = torch.full((1, len(ratios)), -1.0)
    logp = (old + torch.log(torch.tensor([ratios]))).requires_grad_(True)
    mask_t = torch.tensor([mask or [1] * len(ratios)])
    loss, metrics = ppo_policy_loss(logp, old, torch.tensor([advs]), mask_t, **params)
    loss.backward()
    return loss.item(), logp.grad[0].tolist(), metrics


def test_on_policy_loss_and_gradient() -> None:
    loss, grad, metrics = _run([1.0, 1.0], [1.0, -1.0])
    assert loss == pytest.approx(0.0)
    assert grad == pytest.approx([-0.5, 0.5])  # −A·r / N, r = 1
    assert metrics["policy/clip_frac"] == 0.0
    assert metrics["policy/ratio_mean"] == pytest.approx(1.0)


def test_clip_higher_asymmetry() -> None:
    # A > 0, r = 1.25: inside [0.8, 1.28] → unclipped; with symmetric 0.2 → clipped at 1.2
    loss, grad, metrics = _run([1.25], [1.0], clip_range_low=0.2, clip_range_high=0.28)
    assert (loss, grad[0], metrics["policy/clip_frac"]) == (
        pytest.approx(-1.25),
        pytest.approx(-1.25),
        0.0,
    )
    loss, grad, metrics = _run([1.25], [1.0], clip_range_low=0.2, clip_range_high=0.2)
    assert (loss, grad[0], metrics["policy/clip_frac"]) == (pytest.approx(-1.2), 0.0, 1.0)
    # A < 0, r = 0.75: clipped at the *low* side 0.8 → loss 0.8, no gradient
    loss, grad, _ = _run([0.75], [-1.0], clip_range_low=0.2, clip_range_high=0.28)
    assert (loss, grad[0]) == (pytest.approx(0.8), 0.0)


def test_dual_clip_caps_negative_advantage_loss() -> None:
    loss, grad, metrics = _run([5.0], [-1.0], clip_ratio_c=3.0)
    assert (loss, grad[0]) == (pytest.approx(3.0), 0.0)  # min(max(5, 1.2), 3)
    assert metrics["policy/dual_clip_frac"] == 1.0
    loss, grad, _ = _run([5.0], [-1.0], clip_ratio_c=None)
    assert (loss, grad[0]) == (pytest.approx(5.0), pytest.approx(5.0))
    loss, _, metrics = _run([2.0], [-1.0], clip_ratio_c=3.0)  # below the cap: untouched
    assert loss == pytest.approx(2.0)
    assert metrics["policy/dual_clip_frac"] == 0.0
    loss, _, _ = _run([5.0], [1.0], clip_ratio_c=3.0)  # positive A: plain clip at 1.2
    assert loss == pytest.approx(-1.2)


def test_masked_tokens_are_ignored() -> None:
    loss, grad, metrics = _run([1.0, 50.0], [1.0, -1.0], mask=[1, 0])
    assert loss == pytest.approx(-1.0)
    assert grad == pytest.approx([-1.0, 0.0])
    assert metrics["policy/ratio_mean"] == pytest.approx(1.0)


def test_approx_kl_metrics() -> None:
    _, _, metrics = _run([1.25], [1.0], clip_range_high=0.28)
    assert metrics["policy/approx_kl_k1"] == pytest.approx(-math.log(1.25))
    assert metrics["policy/approx_kl_k3"] == pytest.approx(0.25 - math.log(1.25))


def test_registered_and_validates_clip_ratio_c() -> None:
    assert POLICY_LOSS_FNS.get("ppo") is ppo_policy_loss
    with pytest.raises(ValueError, match="clip_ratio_c"):
        _run([1.0], [1.0], clip_ratio_c=1.0)


def test_loss_agg_mode_is_forwarded() -> None:
    old = torch.zeros(2, 2)
    adv = torch.tensor([[1.0, 1.0], [2.0, 0.0]])
    mask = torch.tensor([[1, 1], [1, 0]])
    loss, _ = ppo_policy_loss(old, old, adv, mask, loss_agg_mode="seq-mean-token-sum")
    assert loss.item() == pytest.approx(-(2.0 + 2.0) / 2)
