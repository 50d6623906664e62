"""PNG curves of a run from its ``metrics.jsonl``: reward, eval accuracy, losses, KL,
entropy, lengths, judge numbers, time.

Each panel has a y-axis label and integer step ticks, titles name the run
(``project/name`` from the run directory's ``config.json``), and the eval panel
draws one labelled line per eval taskset.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reinforge.core import explore_metric_names as explore
from reinforge.core.explore_metric_names import eval_metric, explore_metric, workflow_metric
from reinforge.core.metric_names import (
    ENTROPY_VALUE,
    KL_LOSS_VALUE,
    KL_PENALTY_MEAN,
    POLICY_LOSS,
    SFT_LOSS,
    TRAIN_LOSS,
    TRAIN_STEP_TIME,
    train_metric,
)
from reinforge.monitor.jsonl import read_jsonl

Series = dict[str, tuple[list[float], list[float]]]


@dataclass(frozen=True)
class Panel:
    """One plot: the metrics it draws (fnmatch patterns) and its y-axis label."""

    title: str
    patterns: tuple[str, ...]
    ylabel: str


PANELS: list[Panel] = [
    Panel("reward", (explore.EXPLORE_REWARD_MEAN,), "mean reward"),
    Panel("explore accuracy", (explore.EXPLORE_ACCURACY,), "accuracy"),
    # drawn per taskset (see _eval_series): one line each, mean@n or else accuracy
    Panel(
        "eval accuracy",
        (eval_metric("*", explore.ACCURACY), eval_metric("*", explore.MEAN_AT + "*")),
        "accuracy",
    ),
    # what the policy-gradient term alone contributes (sft/loss: the SFT preset's)
    Panel("policy loss", (train_metric(POLICY_LOSS), train_metric(SFT_LOSS)), "policy loss"),
    # the optimised total: policy loss + KL loss - entropy bonus
    Panel("total loss", (TRAIN_LOSS,), "loss"),
    Panel(
        "KL",
        (train_metric(KL_LOSS_VALUE), train_metric(KL_PENALTY_MEAN), "train/policy/approx_kl*"),
        "KL",
    ),
    Panel("entropy", (train_metric(ENTROPY_VALUE),), "entropy (nats/token)"),
    Panel("response length", (explore.EXPLORE_RESPONSE_LENGTH,), "tokens"),
    Panel(
        "judge",
        (
            explore_metric(workflow_metric("judge_success", "mean")),
            explore_metric(workflow_metric("judge_gold_agreement", "mean")),
            explore_metric(workflow_metric("judge_position_consistency", "mean")),
            explore_metric(workflow_metric("gold_reward", "mean")),
        ),
        "rate / reward",
    ),
    Panel(
        "judge latency (s)",
        (explore_metric(workflow_metric("judge_latency", "mean")), "llm_judge/latency_mean"),
        "seconds",
    ),
    Panel(
        "masked experiences",
        (explore.EXPLORE_MASKED_EXPERIENCES, explore.EXPLORE_MASKED_PREFIX + "*"),
        "experiences",
    ),
    Panel("step time (s)", (explore.EXPLORE_STEP_TIME, TRAIN_STEP_TIME), "seconds"),
]
EVAL_PANEL = "eval accuracy"


def _matches(key: str, pattern: str) -> bool:
    from fnmatch import fnmatchcase

    return fnmatchcase(key, pattern)


def read_metrics(run_dir: str | Path) -> list[dict[str, Any]]:
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"'{path}' does not exist: is '{run_dir}' a run directory?")
    return read_jsonl(path)


def run_title(run_dir: str | Path) -> str:
    """``project/name`` from the run directory's ``config.json``; the directory's name
    when that file is missing or unreadable (a copied metrics file, an old run)."""
    try:
        cfg = json.loads((Path(run_dir) / "config.json").read_text(encoding="utf-8"))
        project, name = cfg.get("project"), cfg.get("name")
    except (OSError, ValueError, AttributeError):
        project = name = None
    if project and name:
        return f"{project}/{name}"
    return str(name or Path(run_dir).resolve().name)


def _eval_series(rows: list[dict[str, Any]]) -> Series:
    """One line per eval taskset: its ``mean@n`` (largest n in the row) or else its
    ``accuracy``, labelled ``NAME (metric)`` when one metric is used throughout."""
    points: dict[str, tuple[list[float], list[float]]] = {}
    metrics_used: dict[str, set[str]] = {}
    for row in rows:
        per_taskset: dict[str, dict[str, float]] = {}
        for key, value in row.items():
            prefix = explore.EVAL_PREFIX
            if key.startswith(prefix) and key.count("/") >= 2 and isinstance(value, int | float):
                name, metric = key[len(prefix) : key.rindex("/")], key[key.rindex("/") + 1 :]
                per_taskset.setdefault(name, {})[metric] = float(value)
        for name, found in per_taskset.items():
            at = len(explore.MEAN_AT)
            means = [m for m in found if m.startswith(explore.MEAN_AT) and m[at:].isdigit()]
            metric = max(means, key=lambda m: int(m[at:])) if means else explore.ACCURACY
            if metric not in found:
                continue
            xs, ys = points.setdefault(name, ([], []))
            xs.append(float(row.get("step", len(xs))))
            ys.append(found[metric])
            metrics_used.setdefault(name, set()).add(metric)
    return {
        (f"{name} ({next(iter(metrics_used[name]))})" if len(metrics_used[name]) == 1 else name): xy
        for name, xy in points.items()
    }


def collect_series(rows: list[dict[str, Any]]) -> list[tuple[Panel, Series]]:
    """The panels that have data, each with its lines (label -> steps, values)."""
    found: list[tuple[Panel, Series]] = []
    for panel in PANELS:
        if panel.title == EVAL_PANEL:
            series = _eval_series(rows)
        else:
            series = {}
            for row in rows:
                for key, value in row.items():
                    if isinstance(value, int | float) and any(
                        _matches(key, p) for p in panel.patterns
                    ):
                        xs, ys = series.setdefault(key, ([], []))
                        xs.append(float(row.get("step", len(xs))))
                        ys.append(float(value))
        if series:
            found.append((panel, series))
    return found


def panel_figures(run_dir: str | Path) -> list[tuple[str, Any]]:
    """Figures for a run, not yet saved: ``(file name, Figure)`` per panel with data,
    then ``summary.png`` with all of them. The caller closes them (``plot_run`` does)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = collect_series(read_metrics(run_dir))
    title = run_title(run_dir)
    figures: list[tuple[str, Any]] = []
    for panel, series in panels:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        _draw(ax, panel, series, f"{title}: {panel.title}")
        figures.append((f"{panel.title.split(' (')[0].replace(' ', '_')}.png", fig))
    if panels:
        cols = 2
        nrows = -(-len(panels) // cols)
        fig, axes = plt.subplots(nrows, cols, figsize=(12, 3.2 * nrows + 0.4), squeeze=False)
        for ax, (panel, series) in zip(axes.flat, panels, strict=False):
            _draw(ax, panel, series, panel.title)
        for ax in list(axes.flat)[len(panels) :]:
            ax.axis("off")
        fig.suptitle(title)
        figures.append(("summary.png", fig))
    return figures


def plot_run(run_dir: str | Path, out_dir: str | Path | None = None) -> list[Path]:
    """Write one PNG per panel that has data, plus ``summary.png``; returns the paths."""
    out = Path(out_dir) if out_dir else Path(run_dir) / "plots"
    figures = panel_figures(run_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    try:
        while figures:
            name, fig = figures.pop(0)
            _save(fig, out / name)
            written.append(out / name)
    finally:
        for _, fig in figures:  # a failed save: close what is left
            _close(fig)
    return written


def _close(fig: Any) -> None:
    import matplotlib.pyplot as plt

    plt.close(fig)


def _save(fig: Any, path: Path) -> None:
    """Write a PNG atomically: a reader (or a second process plotting the same run
    directory) never sees a half-written file."""
    tmp = path.with_name(f".{path.stem}-{os.getpid()}.tmp.png")
    try:
        fig.tight_layout()
        fig.savefig(tmp, dpi=100, format="png")
        os.replace(tmp, path)
    finally:
        _close(fig)
        tmp.unlink(missing_ok=True)


def _draw(ax: Any, panel: Panel, series: Series, title: str) -> None:
    from matplotlib.ticker import MaxNLocator

    for label, (xs, ys) in sorted(series.items()):
        ax.plot(xs, ys, marker="o" if len(xs) < 30 else None, markersize=3, label=label)
    ax.set_title(title)
    ax.set_xlabel("step")
    ax.set_ylabel(panel.ylabel)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
    ax.grid(alpha=0.3)
    if len(series) > 1 or panel.title == EVAL_PANEL:
        ax.legend(fontsize=7)
