"""``combine_batch_metrics``: one step's pipeline metrics from its batches' metrics."""

import pytest

from reinforge.buffer.batch_metrics import combine_batch_metrics


def test_counts_add_up_and_statistics_combine_as_such():
    batches = [
        {"reward_std_filter/kept": 8.0, "llm_judge/score_mean": 0.5, "pass_rate": 0.2,
         "shaping/reward_before/min": -1.0, "shaping/reward_after/max": 2.0, "errors": 1},
        {"reward_std_filter/kept": 4.0, "llm_judge/score_mean": 1.0, "pass_rate": 0.4,
         "shaping/reward_before/min": -3.0, "shaping/reward_after/max": 1.0, "errors": 0},
    ]  # fmt: skip
    assert combine_batch_metrics(batches) == {
        "reward_std_filter/kept": 12.0,
        "llm_judge/score_mean": 0.75,
        "pass_rate": pytest.approx(0.3),
        "shaping/reward_before/min": -3.0,
        "shaping/reward_after/max": 2.0,
        "errors": 1.0,
    }


def test_a_key_one_batch_lacks_combines_over_the_batches_that_have_it():
    # an operator that stopped early (empty batch) reports fewer keys
    combined = combine_batch_metrics([{"a/mean": 2.0, "a/kept": 3}, {"a/kept": 0}, {}])
    assert combined == {"a/mean": 2.0, "a/kept": 3.0}


def test_text_and_flags_are_not_numbers_to_combine():
    assert combine_batch_metrics([{"note": "x", "flag": True, "n": 1}]) == {"n": 1.0}


def test_one_batch_is_its_own_metrics():
    one = {"reward_filter/kept": 5.0, "reward_filter/filtered_count": 3.0, "x/std": 0.1}
    assert combine_batch_metrics([one]) == one
