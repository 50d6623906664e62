"""The sampler/trainer mismatch: its log-ratio statistics and the truncated
importance-sampling weights, checked on a constructed batch against by-hand numbers."""

from __future__ import annotations

import math

import pytest
import torch

from reinforge.algorithms import (
    SamplerCorrection,
    cispo_policy_loss,
    gspo_policy_loss,
    log_ratio_stats,
    ppo_policy_loss,
    resolve_algorithm,
    truncated_is_weights,
)

# 2 rows x 4 tokens; row 0's last token and row 1's first are not trained
MASK = torch.tensor([[True, True, True, False], [False, True, True, True]])
OLD = torch.tensor([[-1.0, -0.5, -2.0, -0.3], [-0.1, -1.5, -0.7, -3.0]])
# the sampler's log-probs: exp(old - sampler) is 1.5, 0.9, 3.0 on row 0, 2.5, 1.0, 1.1 on row 1
SAMPLER = OLD - torch.log(torch.tensor([[1.5, 0.9, 3.0, 9.0], [7.0, 2.5, 1.0, 1.1]]))
ADV = torch.tensor([[1.0, 1.0, 1.0, 1.0], [-0.5, -0.5, -0.5, -0.5]])


def test_weights_are_the_capped_ratio_on_masked_tokens_and_one_elsewhere():
    weights, metrics = truncated_is_weights(OLD, SAMPLER, MASK, cap=2.0)
    ratio = torch.exp(OLD - SAMPLER)
    expected = torch.where(MASK, torch.minimum(ratio, torch.tensor(2.0)), torch.ones(()))
    torch.testing.assert_close(weights, expected, rtol=0, atol=0)
    assert not weights.requires_grad
    # trained: 1.5, 0.9, 2 (3 capped), 2 (2.5 capped), 1.0, 1.1
    assert metrics["sampler/tis_weight_mean"] == pytest.approx((1.5 + 0.9 + 2 + 2 + 1.0 + 1.1) / 6)
    assert metrics["sampler/tis_capped_frac"] == pytest.approx(2 / 6)


def test_an_infinite_cap_is_plain_importance_weighting():
    weights, metrics = truncated_is_weights(OLD, SAMPLER, MASK, cap=math.inf)
    torch.testing.assert_close(weights[MASK], torch.exp(OLD - SAMPLER)[MASK], rtol=0, atol=0)
    assert metrics["sampler/tis_capped_frac"] == 0.0


@pytest.mark.parametrize("loss_fn", [ppo_policy_loss, gspo_policy_loss, cispo_policy_loss])
def test_unit_weights_leave_the_loss_and_gradient_bit_identical(loss_fn):
    """The correction off (no weights) and all-one weights give the same bits: the
    token_weights path changes nothing but the weighting."""
    results = []
    for token_weights in (None, torch.ones_like(OLD)):
        logp = (OLD + 0.05 * torch.arange(8.0).reshape(2, 4)).requires_grad_(True)
        extra = {} if token_weights is None else {"token_weights": token_weights}
        loss, _ = loss_fn(logp, OLD, ADV, MASK, **extra)
        loss.backward()
        results.append((loss.detach(), logp.grad))
    assert torch.equal(results[0][0], results[1][0])
    assert torch.equal(results[0][1], results[1][1])


def test_ppo_loss_with_the_correction_equals_a_from_scratch_computation():
    cap = 2.0
    logp = (OLD + torch.tensor([[0.1, -0.3, 0.0, 0.0], [0.0, 0.25, -0.1, 0.02]])).requires_grad_(
        True
    )
    weights, _ = truncated_is_weights(OLD, SAMPLER, MASK, cap)
    loss, _ = ppo_policy_loss(logp, OLD, ADV, MASK, clip_ratio_c=None, token_weights=weights)
    loss.backward()

    # from scratch, token by token
    total = torch.zeros(())
    scratch = OLD.clone() + torch.tensor([[0.1, -0.3, 0.0, 0.0], [0.0, 0.25, -0.1, 0.02]])
    scratch.requires_grad_(True)
    count = 0
    for b in range(2):
        for t in range(4):
            if not MASK[b, t]:
                continue
            r = torch.exp(scratch[b, t] - OLD[b, t])
            a = ADV[b, t]
            surrogate = torch.maximum(-a * r, -a * r.clamp(0.8, 1.2))
            w = min(math.exp(float(OLD[b, t] - SAMPLER[b, t])), cap)
            total = total + w * surrogate
            count += 1
    expected = total / count
    expected.backward()
    torch.testing.assert_close(loss.detach(), expected.detach())
    torch.testing.assert_close(logp.grad, scratch.grad)


def test_ppo_on_policy_gradient_with_infinite_cap_is_the_plain_is_gradient():
    """At π_θ = π_old (a step's first pass) the corrected PPO gradient is that of the
    importance-weighted objective −A·π_θ/π_sampler: the sampler's numerics corrected."""
    logp = OLD.clone().requires_grad_(True)
    weights, _ = truncated_is_weights(OLD, SAMPLER, MASK, math.inf)
    loss, _ = ppo_policy_loss(logp, OLD, ADV, MASK, token_weights=weights)
    loss.backward()

    plain = OLD.clone().requires_grad_(True)
    objective = (-ADV * torch.exp(plain - SAMPLER))[MASK].sum() / MASK.sum()
    objective.backward()
    torch.testing.assert_close(logp.grad, plain.grad)


def test_cispo_and_gspo_scale_each_token_term_by_its_weight():
    logp = (OLD + 0.1).requires_grad_(True)
    weights, _ = truncated_is_weights(OLD, SAMPLER, MASK, 2.0)
    for loss_fn in (cispo_policy_loss, gspo_policy_loss):
        weighted, _ = loss_fn(
            logp, OLD, ADV, MASK, token_weights=weights, loss_agg_mode="token-mean"
        )
        # a token-mean loss is linear in the per-token terms: weighting them = weighting the
        # loss matrix, which the unweighted loss with the weights folded into the advantages
        # reproduces (A enters both losses linearly, and the weights are detached)
        folded, _ = loss_fn(logp, OLD, ADV * weights, MASK, loss_agg_mode="token-mean")
        torch.testing.assert_close(weighted, folded)


def test_log_ratio_stats_on_the_masked_tokens():
    log_ratio = torch.tensor([[0.1, -0.4, 0.2, 9.0], [-9.0, 0.05, -0.1, 0.3]])
    stats = log_ratio_stats(log_ratio, MASK)
    trained = [0.1, -0.4, 0.2, 0.05, -0.1, 0.3]
    assert stats["sampler/log_ratio_mean"] == pytest.approx(sum(trained) / 6)
    assert stats["sampler/log_ratio_max"] == pytest.approx(0.3)
    assert stats["sampler/log_ratio_min"] == pytest.approx(-0.4)
    assert stats["sampler/abs_log_ratio_mean"] == pytest.approx(sum(map(abs, trained)) / 6)
    assert stats["sampler/abs_log_ratio_max"] == pytest.approx(0.4)


def test_the_option_resolves_from_yaml_and_is_off_by_default():
    assert resolve_algorithm("grpo").sampler_correction is None
    spec = resolve_algorithm("grpo", {"sampler_correction": {"type": "tis", "cap": 3}})
    assert spec.sampler_correction == SamplerCorrection(type="tis", cap=3.0)
    for preset in ("gspo", "cispo", "dapo", "rloo", "multi_step_grpo"):
        assert resolve_algorithm(preset, {"sampler_correction": {}}).sampler_correction.cap == 2.0


@pytest.mark.parametrize("preset", ["sft", "opmd"])
def test_a_loss_without_token_weights_refuses_the_correction(preset):
    with pytest.raises(ValueError, match=rf"policy loss '{preset}' takes no token_weights"):
        resolve_algorithm(preset, {"sampler_correction": {"type": "tis", "cap": 2.0}})


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"type": "mis"}, "sampler_correction.type 'mis' is unknown"),
        ({"cap": 0.5}, "sampler_correction.cap must be >= 1"),
        ({"cap": "big"}, "sampler_correction.cap must be a number"),
        ({"cap": 2.0, "level": "token"}, r"unknown keys \['level'\]"),
        ("tis", "must be a mapping"),
    ],
)
def test_bad_options_are_refused_by_name(value, message):
    with pytest.raises(ValueError, match=message):
        resolve_algorithm("grpo", {"sampler_correction": value})


def test_the_trainer_supplies_token_weights_not_policy_loss_args():
    with pytest.raises(ValueError, match="may not set"):
        resolve_algorithm("grpo", {"policy_loss_args": {"token_weights": 1.0}})
