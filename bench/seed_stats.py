"""Statistics over seeds for side-by-side benchmarks: means with 95% intervals,
paired differences, and time to reach an accuracy level.

Student-t intervals (the seeds are few, so a normal quantile would be too narrow);
the quantiles are tabulated here to keep the bench free of a scipy dependency.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

#: two-sided 95% Student-t quantiles t(0.975, df) for df = 1..30; beyond 30 the
#: normal 1.96 is within 4% of the true value
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t975(df: int) -> float:
    """The 97.5% quantile of Student's t with ``df`` degrees of freedom."""
    if df < 1:
        return math.nan
    return _T975[df - 1] if df <= len(_T975) else 1.96


@dataclass(frozen=True)
class Interval:
    """Mean of ``n`` values with its two-sided 95% t-interval (nan bounds when n < 2)."""

    mean: float
    low: float
    high: float
    n: int

    @property
    def width(self) -> float:
        return self.high - self.low

    def format(self, signed: bool = False) -> str:
        """``mean [low, high]`` to 3 decimals (with explicit signs if ``signed``)."""
        f = "+.3f" if signed else ".3f"
        if self.n < 2:
            return f"{self.mean:{f}} ({self.n} seed, no interval)"
        return f"{self.mean:{f}} [{self.low:{f}}, {self.high:{f}}]"


def interval(values: Sequence[float]) -> Interval:
    """The mean of ``values`` and its 95% t-interval."""
    n = len(values)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0)
    mean = statistics.fmean(values)
    if n < 2:
        return Interval(mean, math.nan, math.nan, n)
    half = t975(n - 1) * statistics.stdev(values) / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n)


def seeds_for_width(values: Sequence[float], width: float, limit: int = 1000) -> int | None:
    """How many seeds a paired difference with the spread of ``values`` needs for a 95%
    interval narrower than ``width`` (None if ``values`` cannot tell: fewer than 2)."""
    if len(values) < 2:
        return None
    sd = statistics.stdev(values)
    if sd == 0:
        return 2
    for n in range(2, limit + 1):
        if 2 * t975(n - 1) * sd / math.sqrt(n) < width:
            return n
    return None


def time_to_level(schedule: Sequence[tuple[float, float]], level: float) -> float:
    """Wall seconds at the first ``(wall_s, accuracy)`` point whose accuracy reaches
    ``level``; ``inf`` when none does (the run stopped before it got there)."""
    for wall, accuracy in sorted(schedule):
        if accuracy >= level:
            return wall
    return math.inf


def median(values: Sequence[float]) -> float:
    """The median; ``inf`` entries (never reached) count as larger than any time."""
    return statistics.median(values) if values else math.nan
