"""bench/agent_learning.py's statistics over seeds, its curves plot and its printed
report (split out of the script: house rules). Pure functions of the results."""

from __future__ import annotations

import math
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import seed_stats

# ---- statistics -------------------------------------------------------------------------


def summary(values: list[float]) -> dict[str, Any]:
    """Mean and 95% t-interval over seeds (``seed_stats.interval``), with the values."""
    out = asdict(seed_stats.interval(values))
    out["values"] = list(values)
    return out


def paired_difference(candidate: list[float], baseline: list[float]) -> dict[str, Any]:
    """``candidate - baseline`` seed by seed, summarised as ``summary``."""
    if len(candidate) != len(baseline):
        raise ValueError(f"{len(candidate)} candidate seeds against {len(baseline)} baseline")
    return summary([c - b for c, b in zip(candidate, baseline, strict=True)])


def mean_curve(curves: list[list[tuple[int, float]]]) -> list[tuple[int, float, int]]:
    """``(step, mean success, seeds)`` at every step any curve has, steps ascending."""
    at: dict[int, list[float]] = {}
    for curve in curves:
        for step, value in curve:
            at.setdefault(step, []).append(value)
    return [(s, sum(v) / len(v), len(v)) for s, v in sorted(at.items())]


def fmt(summary_row: dict[str, Any], signed: bool = False) -> str:
    return seed_stats.Interval(
        summary_row["mean"], summary_row["low"], summary_row["high"], summary_row["n"]
    ).format(signed=signed)


# ---- plot and report ------------------------------------------------------------------


def plot(result: dict[str, Any], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, curve in result["curves"].items():
        if curve:
            ax.plot([c[0] for c in curve], [c[1] for c in curve], marker="o", label=name)
        for run in (r for r in result["runs"] if r["name"] == name):
            ax.plot(*zip(*run["evals"], strict=True), color="grey", alpha=0.25, lw=0.8)
    base = result["stages"].get("base", {}).get("mean")
    if base is not None and not math.isnan(base):
        ax.axhline(base, color="black", ls=":", label="base model")
    chance = result.get("references", {}).get("random")
    if chance is not None:
        ax.axhline(chance, color="red", ls="--", lw=0.8, label="random moves")
    ax.set_xlabel("RL step (0 = the SFT warm start)")
    ax.set_ylabel("held-out success")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def report(result: dict[str, Any]) -> None:
    print(f"\nheld-out success over seeds {result['seeds']} (mean [95% t-interval]):")
    for stage, row in result["stages"].items():
        print(f"  {stage:16} {fmt(row)}   values {[round(v, 3) for v in row['values']]}")
    if "references" in result:
        print("  players without a model on the same maps: " + ", ".join(
            f"{name} {value:.3f}" for name, value in result["references"].items()
        ))  # fmt: skip
    if "difference" in result:
        diff = result["difference"]
        print(f"  {diff['name']:16} {fmt(diff, signed=True)}  (paired by seed, final eval)")
    print("runs (wall time, peak RSS):")
    for run in result["runs"]:
        if run["name"] != "base":
            print(f"  seed {run['seed']}  {run['name']:16} {run['wall_s']:7.0f} s  "
                  f"{run['peak_rss_mb']:7.0f} MiB")  # fmt: skip
