"""Bad image input fails the task with the reason recorded; the run goes on.

One explore step over four image tasks (one good, a missing file, a file that is no
image, a remote URL) on the tiny VLM, and the same taskset on the text-only tiny
model: each bad task is stored as failed with its reason, the good one as ok.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.main import app

DATA = Path(__file__).resolve().parents[2] / "examples" / "multimodal" / "data"

CONFIG = """
project: mm
name: bad
model:
  model_path: %s
  engine: hf
  max_response_tokens: 4
  hf: {batch_window_ms: 2}
buffer:
  batch_size: 4
  total_steps: 1
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {prompt_key: question, response_key: answer, image_key: image}
      repeat_times: 2
      default_workflow_type: simple_mm_workflow
      default_reward_fn_type: accuracy_reward
explorer:
  runner_concurrency: 2
  eval_on_start: false
  max_retry_times: 0
monitor: {progress: false, tensorboard: false, plot: false}
"""


def _tasks(tmp_path: Path) -> None:
    good = json.loads((DATA / "train.jsonl").read_text().splitlines()[0])
    (tmp_path / "not_an_image.png").write_text("hello")
    rows = [
        good,
        {**good, "image": str(tmp_path / "missing.png")},
        {**good, "image": str(tmp_path / "not_an_image.png")},
        {**good, "image": "https://example.com/shapes.png"},
    ]
    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


def _results(tmp_path: Path, model: str) -> dict[str, tuple[str, str | None]]:
    (tmp_path / "cfg.yaml").write_text(CONFIG % model)
    run_dir = tmp_path / f"run-{model}"
    result = CliRunner().invoke(
        app, ["explore", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(run_dir)]
    )
    assert result.exit_code == 0, (result.exception, result.output[-3000:])
    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        return {r.task: (r.status, r.error) for r in storage.task_results()}
    finally:
        storage.close()


@pytest.mark.usefixtures("tiny_vlm_path")
def test_bad_images_fail_their_tasks_only(tmp_path: Path) -> None:
    _tasks(tmp_path)
    results = _results(tmp_path, "tiny-random-smolvlm")
    statuses = sorted(results.values(), key=lambda r: r[1] or "")
    assert [s for s, _ in statuses].count("ok") == 1, results
    errors = " | ".join(e for _, e in statuses if e)
    assert "missing.png' does not exist" in errors
    assert "not a readable image" in errors
    assert "is remote; reinforge has no network access" in errors


@pytest.mark.usefixtures("tiny_model_path")
def test_images_for_a_text_only_model_fail_with_the_reason(tmp_path: Path) -> None:
    _tasks(tmp_path)
    results = _results(tmp_path, "tiny-random-smollm2")
    assert {s for s, _ in results.values()} == {"failed"}
    good = [e for _, e in results.values() if e and "text-only" in e]
    assert good, results
