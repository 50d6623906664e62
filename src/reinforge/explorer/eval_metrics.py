"""Evaluation metrics over ``n`` rollouts per task: mean@n, std@n, best@k, worst@k."""

from __future__ import annotations

from math import comb

import numpy as np

from reinforge.core.explore_metric_names import BEST_AT, MEAN_AT, STD_AT, WORST_AT, at


def expected_best_of_k(scores: list[float], k: int) -> float:
    """Unbiased E[max of k samples drawn without replacement from ``scores``]."""
    ordered = sorted(scores)
    n = len(ordered)
    total = comb(n, k)
    # the i-th smallest (1-based) is the max of a k-subset in C(i-1, k-1) subsets
    return sum(comb(i - 1, k - 1) * ordered[i - 1] for i in range(k, n + 1)) / total


def expected_worst_of_k(scores: list[float], k: int) -> float:
    return -expected_best_of_k([-s for s in scores], k)


def eval_metrics(per_task: dict[str, list[float]], prefix: str = "") -> dict[str, float]:
    """Aggregate per-task score lists into mean@n, std@n, best@k and worst@k (k = 2, 4, ... <= n).

    ``n`` is the smallest number of scores any task has; each task's first ``n`` are used.
    """
    lists = [v for v in per_task.values() if v]
    if not lists:
        return {}
    n = min(len(v) for v in lists)
    arr = np.array([v[:n] for v in lists], dtype=float)
    out = {
        prefix + at(MEAN_AT, n): float(arr.mean()),
        prefix + at(STD_AT, n): float(arr.std(axis=1).mean()),
    }
    k = 2
    while k <= n:
        out[prefix + at(BEST_AT, k)] = float(
            np.mean([expected_best_of_k(list(row), k) for row in arr])
        )
        out[prefix + at(WORST_AT, k)] = float(
            np.mean([expected_worst_of_k(list(row), k) for row in arr])
        )
        k *= 2
    if n > 1 and prefix + at(BEST_AT, n) not in out:
        out[prefix + at(BEST_AT, n)] = float(arr.max(axis=1).mean())
        out[prefix + at(WORST_AT, n)] = float(arr.min(axis=1).mean())
    return out
