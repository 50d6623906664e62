"""Plot panels: y labels, integer step ticks, the run name in titles, one eval line per
taskset, policy loss apart from the total loss (checked on matplotlib objects)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reinforge.monitor.plot import PANELS, panel_figures, plot_run, run_title


def _rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for step in range(1, 6):
        rows.append({"step": step, "explore/reward_mean": 0.1 * step, "explore/step_time": 2.0})
        rows.append(
            {
                "step": step,
                "train/loss": 1.0 + step,  # total: policy + KL - entropy bonus
                "train/policy/loss": 0.5 * step,
                "train/kl_loss/value": 0.01,
                "train/step_time": 1.0,
            }
        )
        if step % 2 == 1:
            rows.append(
                {
                    "step": step,
                    "eval/test/tasks": 4.0,
                    "eval/test/accuracy": 0.2 * step,
                    "eval/test/mean@4": 0.1 * step,
                    "eval/test/best@4": 0.3,
                }
            )
            rows.append({"step": step, "eval/hard/tasks": 4.0, "eval/hard/accuracy": 0.05 * step})
    return rows


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    (tmp_path / "config.json").write_text(json.dumps({"project": "arith", "name": "grpo-a"}))
    return tmp_path


@pytest.fixture
def figures(run_dir: Path):
    import matplotlib.pyplot as plt

    made = dict(panel_figures(run_dir))
    yield made
    for fig in made.values():
        plt.close(fig)


def _lines(ax: Any) -> dict[str, tuple[list[float], list[float]]]:
    return {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in ax.lines}


def test_every_panel_has_a_y_label_integer_steps_and_the_run_name(figures: dict) -> None:
    names = set(figures)
    assert {"reward.png", "eval_accuracy.png", "policy_loss.png", "total_loss.png"} <= names
    assert {"KL.png", "step_time.png", "summary.png"} <= names
    for name, fig in figures.items():
        fig.canvas.draw()
        for ax in fig.axes:
            if not ax.axison:  # the summary's unused cells
                continue
            assert ax.get_ylabel(), (name, ax.get_title())
            assert ax.get_xlabel() == "step"
            ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
            assert ticks and all(float(t).is_integer() for t in ticks), (name, ticks)
        if name != "summary.png":
            assert fig.axes[0].get_title().startswith("arith/grpo-a: ")
    assert figures["summary.png"].get_suptitle() == "arith/grpo-a"


def test_eval_panel_draws_one_labelled_line_per_taskset(figures: dict) -> None:
    ax = figures["eval_accuracy.png"].axes[0]
    lines = _lines(ax)
    assert set(lines) == {"test (mean@4)", "hard (accuracy)"}
    assert lines["test (mean@4)"][0] == [1.0, 3.0, 5.0]
    assert lines["test (mean@4)"][1] == pytest.approx([0.1, 0.3, 0.5])  # mean@4, not accuracy
    assert lines["hard (accuracy)"][1] == pytest.approx([0.05, 0.15, 0.25])
    assert {t.get_text() for t in ax.get_legend().get_texts()} == set(lines)
    assert ax.get_ylabel() == "accuracy"


def test_policy_loss_panel_plots_the_policy_loss_and_total_has_its_own(figures: dict) -> None:
    policy = _lines(figures["policy_loss.png"].axes[0])
    assert list(policy) == ["train/policy/loss"]
    assert policy["train/policy/loss"][1] == pytest.approx([0.5, 1.0, 1.5, 2.0, 2.5])
    total = _lines(figures["total_loss.png"].axes[0])
    assert list(total) == ["train/loss"]
    assert total["train/loss"][1] == pytest.approx([2.0, 3.0, 4.0, 5.0, 6.0])


def test_sft_runs_get_their_loss_in_the_policy_panel(tmp_path: Path) -> None:
    rows = [{"step": s, "train/loss": 1.0 / s, "train/sft/loss": 1.0 / s} for s in (1, 2)]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    names = {p.name for p in plot_run(tmp_path)}
    assert names == {"policy_loss.png", "total_loss.png", "summary.png"}


def test_plot_run_writes_the_files(run_dir: Path) -> None:
    paths = plot_run(run_dir)
    assert paths[-1] == run_dir / "plots" / "summary.png"
    for path in paths:
        assert path.read_bytes().startswith(b"\x89PNG"), path
    assert not list((run_dir / "plots").glob(".*tmp*"))


def test_run_title_falls_back_to_the_directory_name(tmp_path: Path) -> None:
    assert run_title(tmp_path) == tmp_path.name
    (tmp_path / "config.json").write_text("{not json")
    assert run_title(tmp_path) == tmp_path.name


def test_existing_panels_are_kept() -> None:
    titles = [p.title for p in PANELS]
    for title in ("judge", "judge latency (s)", "masked experiences", "entropy"):
        assert title in titles
    assert all(p.ylabel for p in PANELS)
