"""``examples/task_scheduling``: the difficulty-based selector changes the schedule over a
run (mock engine), and a run stopped and resumed reads exactly the tasks a straight run
reads, because the selector's state is stored with each step."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.buffer.task_scheduler import MEAN_PASS_RATE
from reinforge.cli.main import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "task_scheduling"
QUIET = ["--set", "monitor.tensorboard=false", "--set", "monitor.plot=false"]


def _explore(run_dir: Path, *overrides: str) -> None:
    """``reinforge run`` in explore mode: re-run on the same run directory, it resumes."""
    args = ["run", "-c", str(EXAMPLE / "explore_mock.yaml"), "--run-dir", str(run_dir)]
    args += ["--set", "mode=explore"]
    for override in overrides:
        args += ["--set", override]
    result = CliRunner().invoke(app, args + QUIET)
    assert result.exit_code == 0, (result.exception, result.output[-3000:])


def _tasks_by_step(run_dir: Path) -> list[list[int]]:
    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        exps = storage.read()
    finally:
        storage.close()
    steps: dict[int, list[int]] = {}
    for exp in exps:  # each task once per rollout (repeat_times 4), each step once
        steps.setdefault(int(exp.eid.batch), []).append(exp.info["task_index"]["index"])
    assert all(len(s) == 6 * 4 for s in steps.values()), {k: len(v) for k, v in steps.items()}
    return [sorted(set(steps[s])) for s in sorted(steps)]


def test_easy_first_schedule_shifts_to_the_easy_tasks_and_resumes_exactly(tmp_path: Path) -> None:
    kinds = [json.loads(line)["kind"] for line in (EXAMPLE / "data" / "tasks.jsonl").open()]
    straight = tmp_path / "straight"
    _explore(straight)
    steps = _tasks_by_step(straight)
    assert len(steps) == 8 and all(len(s) == 6 for s in steps)  # no task twice in a step

    def easy(step: list[int]) -> float:
        return sum(kinds[i] == "easy" for i in step) / len(step)

    # the first step knows nothing and reads a mix; the last three read the easy tasks
    assert easy(steps[0]) <= 0.5
    assert min(easy(s) for s in steps[-3:]) >= 5 / 6
    metrics = [json.loads(line) for line in (straight / "metrics.jsonl").open()]
    rates = [m[MEAN_PASS_RATE] for m in metrics if MEAN_PASS_RATE in m]
    assert len(rates) == 8 and rates[-1] > rates[0] + 0.3

    resumed = tmp_path / "resumed"
    _explore(resumed, "buffer.total_steps=3")
    _explore(resumed, "buffer.total_steps=8")
    assert _tasks_by_step(resumed) == steps
