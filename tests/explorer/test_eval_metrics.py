"""best@k / worst@k / mean@n / std@n against hand-computed values."""

from __future__ import annotations

from itertools import combinations
from math import comb

import pytest

from reinforge.explorer.eval_metrics import eval_metrics, expected_best_of_k, expected_worst_of_k


def test_best_and_worst_of_two_from_binary_scores() -> None:
    scores = [0.0, 1.0, 1.0, 0.0]
    # best@2 fails only if both picks are wrong: 1 - C(2,2)/C(4,2) = 5/6
    assert expected_best_of_k(scores, 2) == pytest.approx(1 - comb(2, 2) / comb(4, 2))
    assert expected_best_of_k(scores, 2) == pytest.approx(5 / 6)
    # worst@2 succeeds only if both picks are right: C(2,2)/C(4,2) = 1/6
    assert expected_worst_of_k(scores, 2) == pytest.approx(1 / 6)


def test_k_equal_to_n_is_plain_max_and_min() -> None:
    scores = [0.3, 0.9, 0.1, 0.5]
    assert expected_best_of_k(scores, 4) == pytest.approx(0.9)
    assert expected_worst_of_k(scores, 4) == pytest.approx(0.1)
    assert expected_best_of_k(scores, 1) == pytest.approx(sum(scores) / 4)  # k=1 is the mean


def test_graded_scores_match_enumeration_of_all_subsets() -> None:
    scores = [0.2, 0.5, 0.9]
    # subsets of 2: {0.2,0.5} {0.2,0.9} {0.5,0.9} -> max 0.5, 0.9, 0.9; min 0.2, 0.2, 0.5
    assert expected_best_of_k(scores, 2) == pytest.approx((0.5 + 0.9 + 0.9) / 3)
    assert expected_worst_of_k(scores, 2) == pytest.approx((0.2 + 0.2 + 0.5) / 3)
    ragged = [1.0, 0.0, 0.25, 0.75, 0.5, 0.0]
    for k in range(1, 7):
        subsets = list(combinations(ragged, k))
        assert expected_best_of_k(ragged, k) == pytest.approx(
            sum(max(s) for s in subsets) / len(subsets)
        )
        assert expected_worst_of_k(ragged, k) == pytest.approx(
            sum(min(s) for s in subsets) / len(subsets)
        )


def test_eval_metrics_for_one_task_of_four_rollouts() -> None:
    out = eval_metrics({"t0": [0.0, 1.0, 1.0, 0.0]}, prefix="eval/x/")
    assert out == pytest.approx(
        {
            "eval/x/mean@4": 0.5,
            "eval/x/std@4": 0.5,  # population std of 0,1,1,0
            "eval/x/best@2": 5 / 6,
            "eval/x/worst@2": 1 / 6,
            "eval/x/best@4": 1.0,
            "eval/x/worst@4": 0.0,
        }
    )


def test_eval_metrics_average_over_tasks() -> None:
    per_task = {
        "a": [1.0, 1.0, 1.0, 1.0],  # always right
        "b": [0.0, 0.0, 0.0, 0.0],  # always wrong
        "c": [1.0, 0.0, 0.0, 0.0],  # right once
    }
    out = eval_metrics(per_task)
    assert out["mean@4"] == pytest.approx((1 + 0 + 0.25) / 3)
    # per-task std: 0, 0, sqrt(0.25 * 0.75); averaged over tasks
    assert out["std@4"] == pytest.approx((0.75**0.5 * 0.25**0.5) / 3)
    # best@2 of "c": 1 - C(3,2)/C(4,2) = 1/2; worst@2 of "c": 0
    assert out["best@2"] == pytest.approx((1 + 0 + 0.5) / 3)
    assert out["worst@2"] == pytest.approx((1 + 0 + 0) / 3)
    assert out["best@4"] == pytest.approx(2 / 3)
    assert out["worst@4"] == pytest.approx(1 / 3)


def test_n_is_the_smallest_count_and_non_power_of_two_n_is_reported() -> None:
    # n = 3: the fourth score of "a" is ignored; k runs over 2 and then n itself
    out = eval_metrics({"a": [1.0, 0.0, 1.0, 0.0], "b": [0.0, 0.0, 1.0]})
    assert set(out) == {"mean@3", "std@3", "best@2", "worst@2", "best@3", "worst@3"}
    assert out["mean@3"] == pytest.approx((2 / 3 + 1 / 3) / 2)
    # a=[1,0,1]: best@2 = 1 - 0 = 1, worst@2 = C(2,2)/C(3,2) = 1/3
    # b=[0,0,1]: best@2 = 1 - C(2,2)/C(3,2) = 2/3, worst@2 = 0
    assert out["best@2"] == pytest.approx((1 + 2 / 3) / 2)
    assert out["worst@2"] == pytest.approx((1 / 3 + 0) / 2)
    assert out["best@3"] == pytest.approx(1.0)
    assert out["worst@3"] == pytest.approx(0.0)


def test_single_rollout_has_no_best_or_worst_and_empty_input_gives_nothing() -> None:
    assert eval_metrics({"a": [1.0], "b": [0.0]}) == pytest.approx({"mean@1": 0.5, "std@1": 0.0})
    assert eval_metrics({}) == {}
    assert eval_metrics({"a": []}) == {}
