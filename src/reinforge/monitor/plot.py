"""PNG curves of a run from its ``metrics.jsonl``: reward, eval accuracy, loss, KL, entropy, lengths, time."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from reinforge.monitor.jsonl import read_jsonl

PANELS: list[tuple[str, list[str]]] = [
    ("reward", ["explore/reward_mean"]),
    ("explore accuracy", ["explore/accuracy"]),
    ("eval accuracy", ["eval/*/accuracy", "eval/*/mean@*"]),
    ("policy loss", ["train/loss"]),
    ("KL", ["train/kl_loss/value", "train/kl_penalty/mean", "train/policy/approx_kl*"]),
    ("entropy", ["train/entropy/value"]),
    ("response length", ["explore/response_length"]),
    (
        "judge",
        [
            "explore/workflow/judge_success/mean",
            "explore/workflow/judge_gold_agreement/mean",
            "explore/workflow/judge_position_consistency/mean",
            "explore/workflow/gold_reward/mean",
        ],
    ),
    ("judge latency (s)", ["explore/workflow/judge_latency/mean", "llm_judge/latency_mean"]),
    ("masked experiences", ["explore/masked_experiences", "explore/masked/*"]),
    ("step time (s)", ["explore/step_time", "train/step_time"]),
]


def _matches(key: str, pattern: str) -> bool:
    from fnmatch import fnmatchcase

    return fnmatchcase(key, pattern)


def read_metrics(run_dir: str | Path) -> list[dict[str, Any]]:
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"'{path}' does not exist: is '{run_dir}' a run directory?")
    return read_jsonl(path)


def plot_run(run_dir: str | Path, out_dir: str | Path | None = None) -> list[Path]:
    """Write one PNG per panel that has data, plus ``summary.png``; returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_metrics(run_dir)
    out = Path(out_dir) if out_dir else Path(run_dir) / "plots"
    out.mkdir(parents=True, exist_ok=True)
    series_per_panel: list[tuple[str, dict[str, tuple[list[float], list[float]]]]] = []
    for title, patterns in PANELS:
        series: dict[str, tuple[list[float], list[float]]] = {}
        for row in rows:
            for key, value in row.items():
                if isinstance(value, int | float) and any(_matches(key, p) for p in patterns):
                    xs, ys = series.setdefault(key, ([], []))
                    xs.append(float(row.get("step", len(xs))))
                    ys.append(float(value))
        if series:
            series_per_panel.append((title, series))
    written: list[Path] = []
    for title, series in series_per_panel:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        _draw(ax, title, series)
        path = out / f"{title.split(' (')[0].replace(' ', '_')}.png"
        _save(fig, path)
        written.append(path)
    if series_per_panel:
        cols = 2
        nrows = -(-len(series_per_panel) // cols)
        fig, axes = plt.subplots(nrows, cols, figsize=(12, 3.2 * nrows), squeeze=False)
        for ax, (title, series) in zip(axes.flat, series_per_panel, strict=False):
            _draw(ax, title, series)
        for ax in list(axes.flat)[len(series_per_panel) :]:
            ax.axis("off")
        path = out / "summary.png"
        _save(fig, path)
        written.append(path)
    return written


def _save(fig: Any, path: Path) -> None:
    """Write a PNG atomically: a reader (or a second process plotting the same run
    directory) never sees a half-written file."""
    import matplotlib.pyplot as plt

    tmp = path.with_name(f".{path.stem}-{os.getpid()}.tmp.png")
    try:
        fig.tight_layout()
        fig.savefig(tmp, dpi=100, format="png")
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        tmp.unlink(missing_ok=True)


def _draw(ax: Any, title: str, series: dict[str, tuple[list[float], list[float]]]) -> None:
    for key, (xs, ys) in sorted(series.items()):
        ax.plot(xs, ys, marker="o" if len(xs) < 30 else None, markersize=3, label=key)
    ax.set_title(title)
    ax.set_xlabel("step")
    ax.grid(alpha=0.3)
    if len(series) > 1 or title == "eval accuracy":
        ax.legend(fontsize=7)
