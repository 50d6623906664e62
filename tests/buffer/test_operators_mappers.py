"""Built-in mappers: reward_shaping_mapper, pass_rate_calculator, group_advantage."""

from __future__ import annotations

import asyncio
import math

import pytest
import torch

from reinforge.buffer.operators import (
    ExperienceOperatorV1,
    GroupAdvantage,
    LengthPenalty,
    MetricTerm,
    PassRateCalculator,
    RewardShapingMapper,
    RewardTerm,
    create_operators,
)
from reinforge.core import EID, Experience


def make_exp(
    task: int,
    reward: float | None,
    metrics: dict[str, float] | None = None,
    response_len: int = 2,
    action_mask: list[int] | None = None,
) -> Experience:
    return Experience(
        tokens=list(range(1 + response_len)),
        prompt_length=1,
        reward=reward,
        eid=EID(task=task),
        metrics=dict(metrics or {}),
        action_mask=action_mask,
    )


def run(op: ExperienceOperatorV1, exps: list[Experience]) -> tuple[list[Experience], dict]:
    return asyncio.run(op.process(exps))


# ---- reward_shaping_mapper ----------------------------------------------------------


def test_shaping_sums_weighted_metrics_and_keeps_original_reward() -> None:
    op = RewardShapingMapper(
        rules=[{"metric": "accuracy", "weight": 1.0}, {"metric": "format", "weight": 0.5}]
    )
    exps = [
        make_exp(0, 7.0, {"accuracy": 1.0, "format": 1.0}),
        make_exp(0, 3.0, {"accuracy": 0.0, "format": 1.0}),
    ]
    out, metrics = run(op, exps)
    assert [e.reward for e in out] == [1.5, 0.5]
    assert [e.info["original_reward"] for e in out] == [7.0, 3.0]
    assert metrics == {
        "reward_shaping_mapper/reward_before/mean": 5.0,
        "reward_shaping_mapper/reward_after/mean": 1.0,
    }


def test_shaping_reward_term_and_length_penalty_on_generated_tokens() -> None:
    op = RewardShapingMapper(
        rules=[{"kind": "reward"}, {"kind": "length_penalty", "coef": 0.1, "max_len": 2}]
    )
    short = make_exp(0, 1.0, response_len=2)
    long = make_exp(0, 1.0, response_len=6)  # 4 tokens over the limit
    # 6 response tokens, of which only 3 were generated (the rest: tool output).
    multi_turn = make_exp(0, 1.0, response_len=6, action_mask=[1, 1, 0, 0, 0, 1])
    out, _ = run(op, [short, long, multi_turn])
    assert [e.reward for e in out] == pytest.approx([1.0, 0.6, 0.9])


def test_shaping_metric_default_and_missing_metric_error() -> None:
    with_default = RewardShapingMapper(rules=[{"metric": "bonus", "weight": 2.0, "default": 0.0}])
    out, _ = run(with_default, [make_exp(0, 1.0), make_exp(0, 1.0, {"bonus": 1.0})])
    assert [e.reward for e in out] == [0.0, 2.0]

    strict = RewardShapingMapper(rules=[{"kind": "reward"}, {"metric": "bonus"}])
    exps = [make_exp(0, 1.0, {"bonus": 1.0}), make_exp(0, 2.0)]
    with pytest.raises(KeyError, match="no metric 'bonus'"):
        run(strict, exps)
    # Nothing was written before the failure.
    assert [e.reward for e in exps] == [1.0, 2.0]
    assert all("original_reward" not in e.info for e in exps)


def test_shaping_reward_term_rejects_missing_reward() -> None:
    op = RewardShapingMapper(rules=[{"kind": "reward"}])
    with pytest.raises(ValueError, match="no finite reward"):
        run(op, [make_exp(0, None)])


def test_shaping_rules_parse_into_terms() -> None:
    op = RewardShapingMapper(
        rules=[
            {"metric": "acc"},
            {"kind": "reward", "weight": 0.5},
            {"kind": "length_penalty", "coef": 1e-3, "max_len": 10},
        ]
    )
    assert op.rules == [MetricTerm("acc"), RewardTerm(0.5), LengthPenalty(1e-3, 10)]
    with pytest.raises(ValueError, match="bad 'metric' shaping rule"):
        RewardShapingMapper(rules=[{"metric": "acc", "wieght": 2}])
    with pytest.raises(ValueError, match="coef >= 0"):
        RewardShapingMapper(rules=[{"kind": "length_penalty", "coef": -1}])


def test_shaping_applied_twice_keeps_first_original_reward() -> None:
    op = RewardShapingMapper(rules=[{"kind": "reward", "weight": 2.0}])
    exps = [make_exp(0, 1.0)]
    run(op, exps)
    run(op, exps)
    assert exps[0].reward == 4.0
    assert exps[0].info["original_reward"] == 1.0


# ---- pass_rate_calculator -----------------------------------------------------------


def test_pass_rate_per_group_from_rewards() -> None:
    group_a = [make_exp(0, 1.0), make_exp(0, 0.0), make_exp(0, 1.0), make_exp(0, None)]
    group_b = [make_exp(1, 1.0), make_exp(1, 1.0)]
    group_c = [make_exp(2, 0.0), make_exp(2, math.nan)]
    exps = [*group_a, *group_b, *group_c]
    out, metrics = run(PassRateCalculator(), exps)
    assert out == exps
    assert [e.info["pass_rate"] for e in out] == [0.5] * 4 + [1.0] * 2 + [0.0] * 2
    assert metrics == {
        "pass_rate_calculator/mean": pytest.approx(0.5),
        "pass_rate_calculator/all_pass_fraction": pytest.approx(1 / 3),
        "pass_rate_calculator/all_fail_fraction": pytest.approx(1 / 3),
    }


def test_pass_rate_from_a_metric_with_threshold() -> None:
    (op,) = create_operators(
        [{"name": "pass_rate_calculator", "args": {"metric": "accuracy", "threshold": 0.5}}]
    )
    exps = [
        make_exp(0, 0.0, {"accuracy": 0.9}),
        make_exp(0, 0.0, {"accuracy": 0.4}),
        make_exp(0, 9.0, {}),  # missing metric: fails even with a high reward
        make_exp(0, 0.0, {"accuracy": 0.5}),
    ]
    out, metrics = run(op, exps)
    assert [e.info["pass_rate"] for e in out] == [0.5] * 4
    assert metrics["pass_rate_calculator/mean"] == 0.5


def test_pass_rate_on_empty_batch() -> None:
    assert run(PassRateCalculator(), []) == ([], {})


# ---- group_advantage ----------------------------------------------------------------


def test_group_advantage_grpo_preset_matches_hand_computation() -> None:
    (op,) = create_operators([{"name": "group_advantage", "args": {"algorithm": "grpo"}}])
    group_a = [make_exp(0, 1.0), make_exp(0, 0.0)]
    group_b = [make_exp(1, 1.0), make_exp(1, 1.0), make_exp(1, 0.0), make_exp(1, 0.0)]
    flat = [make_exp(2, 0.5), make_exp(2, 0.5)]
    out, metrics = run(op, [*group_a, *group_b, *flat])
    # Group a: mean 0.5, unbiased std sqrt(0.5); group b: mean 0.5, std sqrt(1/3).
    a = 0.5 / (math.sqrt(0.5) + 1e-6)
    b = 0.5 / (math.sqrt(1 / 3) + 1e-6)
    expected = [a, -a, b, b, -b, -b, 0.0, 0.0]
    got = [float(e.advantages[0]) for e in out]
    assert got == pytest.approx(expected, abs=1e-5)
    for exp, adv in zip(out, expected, strict=True):
        assert torch.allclose(exp.advantages, torch.full((2,), adv), atol=1e-5)
        assert torch.equal(exp.returns, torch.full((2,), float(exp.reward)))
    assert metrics["group_advantage/group/count"] == 3.0
    assert metrics["group_advantage/group/flat_fraction"] == pytest.approx(1 / 3)
    assert metrics["group_advantage/reward/mean"] == pytest.approx(0.5)


def test_group_advantage_defaults_to_grpo_and_accepts_advantage_fn() -> None:
    assert GroupAdvantage().advantage_fn_name == "grpo"
    assert GroupAdvantage().advantage_args == {"std_normalize": True}
    dr_grpo = GroupAdvantage(advantage_fn="grpo", advantage_args={"std_normalize": False})
    out, _ = run(dr_grpo, [make_exp(0, 1.0), make_exp(0, 0.0)])
    assert [float(e.advantages[0]) for e in out] == pytest.approx([0.5, -0.5])


def test_group_advantage_algorithm_with_arg_override() -> None:
    op = GroupAdvantage(algorithm="grpo", advantage_args={"std_normalize": False})
    assert op.advantage_args == {"std_normalize": False}
    rloo = GroupAdvantage(algorithm="rloo")
    assert rloo.advantage_fn_name == "rloo"


def test_group_advantage_rejects_algorithms_without_advantage() -> None:
    with pytest.raises(ValueError, match="'sft' has no advantage"):
        GroupAdvantage(algorithm="sft")


def test_group_advantage_skips_empty_batch() -> None:
    assert run(GroupAdvantage(), []) == ([], {})
