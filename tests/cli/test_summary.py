"""The end-of-run summary: built from step metric rows, then printed by explore/eval/run."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from reinforge.cli.summary import (
    RunSummary,
    eval_lines,
    eval_series,
    explore_line,
    format_duration,
    print_summary,
    score_line,
    skip_reason,
    summary_lines,
    train_line,
)


def explore_row(step: int, **extra: float) -> dict[str, float]:
    row = {
        "step": step,
        "explore/tasks": 4.0,
        "explore/failed_tasks": 0.0,
        "explore/experiences": 16.0,
        "explore/masked_experiences": 0.0,
        "explore/reward_mean": 0.5,
        "explore/accuracy": 0.5,
        "explore/step_time": 2.0,
        "explore/stored": 16,
    }
    return {**row, **extra}


def train_row(step: int, skipped: bool = False, **extra: float) -> dict[str, float]:
    if skipped:
        return {"step": step, "train/stale_dropped": 0.0, "train/skipped": 1.0, **extra}
    return {"step": step, "train/loss": 0.1, "train/experiences": 16.0, **extra}


def eval_row(step: int, name: str, value: float, n: int = 4) -> dict[str, float]:
    prefix = f"eval/{name}/"
    return {
        "step": step,
        prefix + "tasks": 12.0,
        prefix + "failed_tasks": 0.0,
        prefix + "accuracy": value,
        prefix + f"mean@{n}": value,
        prefix + f"std@{n}": 0.1,
        prefix + "best@2": 0.9,
        prefix + f"best@{n}": 0.95,
        prefix + f"worst@{n}": 0.05,
        prefix + "workflow/accuracy/mean": value,
    }


def test_format_duration() -> None:
    assert format_duration(4.24) == "4.2 s"
    assert format_duration(585) == "9m 45s"
    assert format_duration(2 * 3600 + 5 * 60 + 10) == "2h 05m"


def test_explore_line_counts_steps_rollouts_failures_and_masking() -> None:
    rows = [
        explore_row(1),
        explore_row(2, **{"explore/failed_tasks": 1.0}),
        explore_row(
            3,
            **{
                "explore/masked_experiences": 16.0,
                "explore/masked/judge_failed": 16.0,
                "explore/stored": 0,
            },
        ),
    ]
    line = explore_line(rows, wall_time=100.0)
    assert line is not None
    assert line.startswith("3 steps (1-3), 12 tasks, 48 rollouts (480/min), 32 experiences stored")
    assert "1 tasks failed" in line
    assert "16 experiences masked (judge_failed: 16)" in line
    assert "nothing stored at step 3" in line
    assert explore_line([train_row(1)], 1.0) is None


def test_score_line_weights_steps_by_their_experiences() -> None:
    rows = [
        explore_row(1, **{"explore/accuracy": 0.2, "explore/experiences": 10.0}),
        explore_row(2, **{"explore/accuracy": 0.8, "explore/experiences": 30.0}),
    ]
    assert score_line(rows) == ("accuracy", "0.650 over 2 steps (step 1: 0.200 → step 2: 0.800)")
    no_accuracy = [{k: v for k, v in explore_row(1).items() if k != "explore/accuracy"}]
    assert score_line(no_accuracy) == ("reward", "0.500")


def test_train_line_groups_skipped_steps_by_reason() -> None:
    rows = [
        explore_row(1),
        train_row(1),
        explore_row(2, **{"explore/failed_tasks": 4.0, "explore/experiences": 0.0}),
        train_row(2, skipped=True),
        explore_row(3, **{"explore/failed_tasks": 4.0, "explore/experiences": 0.0}),
        train_row(3, skipped=True),
        explore_row(4, **{"explore/stored": 0, "reward_std_filter/dropped": 16.0}),
        train_row(4, skipped=True),
        train_row(5),
    ]
    line = train_line(rows)
    assert line == (
        "2 steps (1, 5); 2 skipped (step 2-3: every task failed); "
        "1 skipped (step 4: the experience pipeline dropped everything (reward_std_filter))"
    )


def test_skip_reasons() -> None:
    masked = explore_row(
        1, **{"explore/masked_experiences": 16.0, "explore/masked/judge": 16.0, "explore/stored": 0}
    )
    assert skip_reason(masked, train_row(1, True)) == "every experience was masked (judge)"
    empty = explore_row(1, **{"explore/experiences": 0.0})
    assert skip_reason(empty, train_row(1, True)) == "the workflows returned no experience"
    stale = train_row(1, True, **{"train/stale_dropped": 16.0})
    assert "too stale" in skip_reason(explore_row(1), stale)
    assert "no usable experience" in skip_reason(None, train_row(1, True))


def test_eval_trend_first_best_last_per_taskset() -> None:
    rows = [
        eval_row(0, "test", 0.2),
        eval_row(0, "other", 0.5, n=8),
        explore_row(1),
        eval_row(4, "test", 0.6),
        eval_row(4, "other", 0.4, n=8),
        eval_row(8, "test", 0.5),
    ]
    headline, points = eval_series(rows)["test"]
    assert headline == "eval/test/mean@4" and [s for s, _ in points] == [0, 4, 8]
    assert eval_lines(rows) == [
        "eval/test/mean@4: 0.200 (step 0) → best 0.600 (step 4) → 0.500 (step 8)",
        "eval/other/mean@8: 0.500 (step 0, best) → 0.400 (step 4)",
    ]
    assert eval_lines([eval_row(3, "t", 0.25)]) == ["eval/t/mean@4: 0.250 (step 3)"]
    rising = [eval_row(0, "t", 0.1), eval_row(2, "t", 0.3)]
    assert eval_lines(rising) == ["eval/t/mean@4: 0.100 (step 0) → best 0.300 (step 2)"]


def test_eval_without_trend_shows_the_spread() -> None:
    row = eval_row(0, "ev", 0.75)
    row["eval/ev/failed_tasks"] = 2.0
    assert eval_lines([row], trend=False) == [
        "eval/ev/mean@4: 0.750 (std@4 0.100, best@4 0.950, worst@4 0.050); 12 tasks, 2 failed"
    ]


def test_eval_headline_falls_back_to_accuracy() -> None:
    row = {"step": 1, "eval/x/tasks": 3.0, "eval/x/accuracy": 0.5}
    assert eval_lines([row]) == ["eval/x/accuracy: 0.500 (step 1)"]


def test_printed_summary_is_a_few_lines_with_places_and_commands() -> None:
    rows = [explore_row(1), train_row(1), eval_row(1, "test", 0.5)]
    summary = RunSummary(
        title="run (both): p/n",
        wall_time=75.0,
        rows=rows,
        places=[("checkpoint", "runs/p/n/checkpoints/step_1"), ("plots", "runs/p/n/plots")],
        commands=[("resume", "reinforge run -c cfg.yaml"), ("plot", "reinforge plot runs/p/n")],
    )
    assert [label for label, _ in summary_lines(summary)] == [
        "explored",
        "accuracy",
        "trained",
        "",
        "checkpoint",
        "plots",
    ]
    out = io.StringIO()
    print_summary(summary, Console(file=out, width=60, soft_wrap=True, highlight=False))
    text = out.getvalue()
    print(text)
    lines = text.splitlines()
    assert lines[0] == "run (both): p/n finished in 1m 15s"
    assert "  plots:      runs/p/n/plots" in lines
    assert lines[-3:] == [
        "next:",
        "  resume: reinforge run -c cfg.yaml",
        "  plot:   reinforge plot runs/p/n",
    ]
    assert len(lines) <= 12


#: the Parity workflow (tests/launcher/parity_workflow.py), loaded as a plugin
PARITY_WORKFLOW = Path(__file__).parents[1] / "launcher" / "parity_workflow.py"

CONFIG = """
project: summary
name: t
run_dir: run
model:
  model_path: tiny-random-smollm2
  engine: hf
  max_response_tokens: 4
  hf: {batch_window_ms: 5}
buffer:
  batch_size: 2
  total_steps: 2
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {prompt_key: question, response_key: answer}
      repeat_times: 2
      default_workflow_type: rf_summary_plugin.Parity
    eval_tasksets:
      - name: ev
        path: tasks.jsonl
        limit: 2
        format: {prompt_key: question, response_key: answer}
        repeat_times: 2
        default_workflow_type: rf_summary_plugin.Parity
trainer: {algorithm: grpo, lr: 1.0e-3, micro_batch_size: 8}
explorer: {runner_concurrency: 2, eval_interval: 1}
monitor: {progress: false, tensorboard: false}
"""


def test_run_prints_the_story_and_the_next_commands_which_work(tmp_path: Path) -> None:
    """A real ``reinforge run`` (tiny model, two steps) ends with the short summary."""
    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for i in range(8):
            fh.write(json.dumps({"question": f"{i} + 1", "answer": str(i + 1)}) + "\n")
    shutil.copy(PARITY_WORKFLOW, tmp_path / "rf_summary_plugin.py")
    (tmp_path / "cfg.yaml").write_text(CONFIG)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-m", "reinforge.cli.main", "run", "-c", "cfg.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    print(out)
    assert out.startswith("run (both): summary/t finished in ")
    assert "  explored:   2 steps (1-2), 4 tasks, 8 rollouts (" in out
    assert "  trained:    2 steps (1-2)\n" in out
    # eval_on_start and eval_interval 1: steps 0, 1, 2; first and last always shown
    assert re.search(r"\n  eval/ev/mean@2: \d\.\d{3} \(step 0.*→ .*\(step 2(, best)?\)\n", out)
    assert "  checkpoint: run/checkpoints/step_2\n" in out
    assert "  plots:      run/plots\n" in out
    assert "  resume: reinforge run -c cfg.yaml\n" in out
    assert "  export: reinforge export run run/hf_model --step 2\n" in out
    assert "  plot:   reinforge plot run\n" in out
    assert "tensorboard" not in out  # not enabled in this config
    assert len(out.splitlines()) <= 14  # short: no per-metric dump
    # the suggested export works and writes a model card beside the weights
    export = subprocess.run(
        [sys.executable, "-m", "reinforge.cli.main", "export", "run", "run/hf_model"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert export.returncode == 0, export.stderr[-3000:]
    assert "exported step_2 to run/hf_model" in export.stdout
    assert (tmp_path / "run/hf_model/config.json").is_file()
    assert (tmp_path / "run/hf_model/README.md").is_file()
    adapter = subprocess.run(
        [sys.executable, "-m", "reinforge.cli.main", "export", "run", "x", "--adapter-only"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert adapter.returncode == 2  # a full fine-tune has no adapter
    assert "no adapter to export" in " ".join(adapter.stderr.split())


def test_step_lists_are_ranges() -> None:
    rows = [train_row(s) for s in [*range(1, 15), 16]]
    assert train_line(rows) == "15 steps (1-14, 16)"
    sparse = [train_row(s) for s in range(1, 17, 2)]
    assert train_line(sparse) == "8 steps (1, 3, 5, 7, 9, 11, ... (8 in all))"
