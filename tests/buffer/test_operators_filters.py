"""Built-in filters: reward_filter, reward_std_filter, invalid_reward_filter."""

from __future__ import annotations

import asyncio
import math

import pytest

from reinforge.buffer.operators import (
    ExperienceOperatorV1,
    InvalidRewardFilter,
    RewardFilter,
    RewardStdFilter,
    create_operators,
)
from reinforge.core import EID, Experience


def make_exp(task: int, reward: object) -> Experience:
    return Experience(tokens=[1, 2, 3], prompt_length=1, reward=reward, eid=EID(task=task))


def run(op: ExperienceOperatorV1, exps: list[Experience]) -> tuple[list[Experience], dict]:
    return asyncio.run(op.process(exps))


def test_reward_filter_keeps_rewards_at_or_above_threshold() -> None:
    exps = [make_exp(0, r) for r in (1.0, 0.5, 0.49, None, math.nan, -1.0)]
    out, metrics = run(RewardFilter(threshold=0.5), exps)
    assert out == exps[:2]
    assert metrics == {"reward_filter/kept": 2.0, "reward_filter/dropped": 4.0}


def test_reward_filter_default_threshold_is_zero() -> None:
    exps = [make_exp(0, 0.0), make_exp(0, -0.1), make_exp(0, math.inf)]
    (op,) = create_operators([{"name": "reward_filter"}])
    out, _ = run(op, exps)
    assert out == exps[:1]


def test_reward_std_filter_drops_flat_groups() -> None:
    varied = [make_exp(0, 1.0), make_exp(0, 0.0)]
    all_right = [make_exp(1, 1.0), make_exp(1, 1.0)]
    all_wrong = [make_exp(2, 0.0), make_exp(2, 0.0), make_exp(2, 0.0)]
    single = [make_exp(3, 1.0)]
    # Interleave groups to check survivors keep their original order.
    exps = [varied[0], all_right[0], all_wrong[0], varied[1], all_right[1], *all_wrong[1:], *single]
    out, metrics = run(RewardStdFilter(), exps)
    assert out == varied
    assert metrics == {
        "reward_std_filter/groups": 4.0,
        "reward_std_filter/dropped_groups": 3.0,
        "reward_std_filter/kept": 2.0,
        "reward_std_filter/dropped": 6.0,
    }


def test_reward_std_filter_threshold_and_invalid_rewards() -> None:
    small = [make_exp(0, 0.5), make_exp(0, 0.6)]  # population std 0.05
    large = [make_exp(1, 0.0), make_exp(1, 1.0), make_exp(1, None)]  # std 0.5, None ignored
    only_one_valid = [make_exp(2, 1.0), make_exp(2, math.nan)]
    out, metrics = run(RewardStdFilter(threshold=0.1), [*small, *large, *only_one_valid])
    assert out == large
    assert metrics["reward_std_filter/dropped_groups"] == 2.0


def test_reward_std_filter_per_run_compares_outcomes() -> None:
    """Step-wise runs: two that both won (in 1 and in 2 steps) have equal outcomes, so
    the group goes with ``per_run``; by experience its step rewards 0, 1, 1 differ."""

    def step(task: int, run: int, step: int, reward: float) -> Experience:
        return Experience(
            tokens=[1, 2], prompt_length=1, reward=reward, eid=EID(task=task, run=run, step=step)
        )

    both_won = [step(0, 0, 0, 0.0), step(0, 0, 1, 1.0), step(0, 1, 0, 1.0)]
    one_lost = [step(1, 0, 0, 0.0), step(1, 0, 1, 0.0), step(1, 1, 0, 1.0)]
    kept, _ = run(RewardStdFilter(), [*both_won, *one_lost])
    assert len(kept) == 6
    kept, metrics = run(RewardStdFilter(per_run=True), [*both_won, *one_lost])
    assert kept == one_lost and metrics["reward_std_filter/dropped_groups"] == 1.0
    with pytest.raises(ValueError, match="per_run"):
        RewardStdFilter(per_run="yes")


def test_invalid_reward_filter_drops_and_counts_each_cause() -> None:
    exps = [
        make_exp(0, 1.0),
        make_exp(0, None),
        make_exp(0, math.nan),
        make_exp(1, math.inf),
        make_exp(1, -math.inf),
        make_exp(1, "oops"),
        make_exp(1, 0),
    ]
    out, metrics = run(InvalidRewardFilter(), exps)
    assert out == [exps[0], exps[6]]
    assert metrics == {
        "invalid_reward_filter/none": 1.0,
        "invalid_reward_filter/nan": 1.0,
        "invalid_reward_filter/inf": 2.0,
        "invalid_reward_filter/non_numeric": 1.0,
        "invalid_reward_filter/dropped": 5.0,
        "invalid_reward_filter/kept": 2.0,
    }


def test_filters_handle_an_empty_batch() -> None:
    for op in (RewardFilter(), RewardStdFilter(), InvalidRewardFilter()):
        out, metrics = run(op, [])
        assert out == []
        assert all(value == 0.0 for value in metrics.values())
