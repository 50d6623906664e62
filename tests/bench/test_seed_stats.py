"""bench/seed_stats.py: t-intervals, seeds needed for a given width, time to a level."""

from __future__ import annotations

import math
import statistics
from types import ModuleType

import pytest


def test_interval_is_the_student_t_interval(stats: ModuleType) -> None:
    values = [0.1, 0.3, 0.2, 0.4]
    iv = stats.interval(values)
    half = 3.182 * statistics.stdev(values) / 2  # t(0.975, 3) * sd / sqrt(4)
    assert iv.mean == pytest.approx(0.25)
    assert (iv.low, iv.high) == pytest.approx((0.25 - half, 0.25 + half))
    assert iv.width == pytest.approx(2 * half)
    assert "0.250 [" in iv.format() and iv.format(signed=True).startswith("+0.250")


def test_one_value_has_no_interval(stats: ModuleType) -> None:
    iv = stats.interval([0.3])
    assert iv.mean == 0.3 and math.isnan(iv.low) and "no interval" in iv.format()
    assert stats.seeds_for_width([0.3], 0.06) is None


def test_seeds_for_width(stats: ModuleType) -> None:
    values = [0.0, 0.1, -0.1, 0.05, -0.05]  # sd 0.079
    n = stats.seeds_for_width(values, 0.06)
    sd = statistics.stdev(values)
    assert 2 * stats.t975(n - 1) * sd / math.sqrt(n) < 0.06
    assert 2 * stats.t975(n - 2) * sd / math.sqrt(n - 1) >= 0.06
    assert stats.seeds_for_width([0.1, 0.1], 0.06) == 2


def test_time_to_level(stats: ModuleType) -> None:
    curve = [(120.0, 0.55), (60.0, 0.45), (180.0, 0.7)]
    assert stats.time_to_level(curve, 0.5) == 120.0
    assert stats.time_to_level(curve, 0.4) == 60.0
    assert stats.time_to_level(curve, 0.8) == math.inf
    assert stats.median([60.0, math.inf, 100.0]) == 100.0
