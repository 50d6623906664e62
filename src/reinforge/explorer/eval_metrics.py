"""Evaluation metrics over ``n`` rollouts per task: mean@n, std@n, best@k, worst@k."""

from __future__ import annotations

from math import comb

import numpy as np


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
        f"{prefix}mean@{n}": float(arr.mean()),
        f"{prefix}std@{n}": float(arr.std(axis=1).mean()),
    }
    k = 2
    while k <= n:
        out[f"{prefix}best@{k}"] = float(np.mean([expected_best_of_k(list(row), k) for row in arr]))
        out[f"{prefix}worst@{k}"] = float(
            np.mean([expected_worst_of_k(list(row), k) for row in arr])
        )
        k *= 2
    if n > 1 and f"{prefix}best@{n}" not in out:
        out[f"{prefix}best@{n}"] = float(arr.max(axis=1).mean())
        out[f"{prefix}worst@{n}"] = float(arr.min(axis=1).mean())
    return out
