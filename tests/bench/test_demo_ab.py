"""bench/demo_ab.py: the phases it reads from a run's metric rows."""

from __future__ import annotations

import demo_ab  # bench/ is on sys.path (tests/bench/conftest.py)
import pytest


def test_each_phase_is_the_median_over_the_steps_that_report_it() -> None:
    rows = [
        {"step": 1, "explore/step_time": 10.0},
        {"step": 1, "train/step_time": 4.0, "train/sync_time": 0.5, "sync/verify_time": 0.2},
        {"step": 2, "explore/step_time": 12.0},
        {
            "step": 2,
            "train/step_time": 6.0,
            "train/sync_time": 0.7,
            "sync/verify_time": 0.1,
            "sync/verify_wait_time": 0.3,
        },
        {"step": 3, "explore/step_time": 30.0},
        {"step": 3, "train/step_time": 5.0, "train/sync_time": 0.6, "sync/verify_wait_time": 0.6},
    ]
    medians = demo_ab.phase_medians(rows)
    assert medians["explore step"] == 12.0  # rows without it are not zeros
    assert medians["train step"] == 5.0
    assert medians["sync"] == 0.6
    # the check's time inside the sync plus its wait at the next step, per step
    assert medians["weight check"] == pytest.approx(0.4)


def test_a_phase_no_step_reports_is_zero() -> None:
    assert demo_ab.phase_medians([{"step": 1, "train/step_time": 3.0}])["sync"] == 0.0


def test_the_phase_total_sums_every_step() -> None:
    rows = [
        {"step": 1, "explore/step_time": 10.0},
        {"step": 1, "train/step_time": 4.0, "train/sync_time": 0.5, "sync/verify_wait_time": 0.1},
        {"step": 2, "explore/step_time": 12.0, "explore/accuracy": 0.5},
    ]
    assert demo_ab.phase_totals(rows) == pytest.approx(26.6)


def test_the_training_step_is_also_timed_per_token() -> None:
    rows = [
        {"step": 1, "train/step_time": 4.0, "train/tokens": 2000},
        {"step": 2, "train/step_time": 9.0, "train/tokens": 3000},
        {"step": 3, "train/step_time": 1.0, "train/tokens": 2000},
        {"step": 4, "explore/step_time": 7.0},
    ]
    assert demo_ab.train_seconds_per_1k_tokens(rows) == pytest.approx(2.0)
