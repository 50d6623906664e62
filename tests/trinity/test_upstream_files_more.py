"""Behaviour of more upstream Trinity-RFT files, tried through ``reinforge migrate`` and
``reinforge explore`` (docs/migrating.md, "Tried on upstream code"), written here as
small snippets of our own that call the mirror the way those files do."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.main import app
from reinforge.trinity.utils.math_eval_utils import (
    extract_answer,
    math_equal,
    strip_string,
    verify_math_answer,
)


def test_qwen_math_helpers_take_upstreams_keyword_names() -> None:
    # Trinity's evaluation workflow calls the check by keyword
    accuracy, details = verify_math_answer(
        response_text="so \\boxed{\\dfrac{1}{2}}", ground_truth="0.5"
    )
    assert accuracy == 1.0 and details["is_correct"]
    assert verify_math_answer(response_text="\\boxed{3}", ground_truth="4")[0] == 0.0
    assert extract_answer(response_text="The answer is \\boxed{7}.") == "7"
    assert strip_string(input_str="x = 3") == "3"
    assert math_equal(prediction="2", reference="2.0")


EVAL_PLUGIN = """
from dataclasses import asdict

from trinity.common.config import GenerationConfig
from trinity.common.workflows.workflow import WORKFLOWS, Workflow
from trinity.utils.math_eval_utils import verify_math_answer


@WORKFLOWS.register_module("boxed_accuracy_only")
class BoxedAccuracyOnly(Workflow):
    def run(self):
        prompt = [{"role": "user", "content": self.task.raw_task["question"]}]
        replies = self.model.chat(prompt, **asdict(GenerationConfig(temperature=0.6, n=1)))
        for reply in replies:
            score, _ = verify_math_answer(response_text=reply.response_text,
                                          ground_truth=self.task.truth)
            reply.metrics.update({"accuracy": score})
        return replies
"""

CONFIG = """
project: trinity
name: eval-style
run_dir: run
model:
  engine: mock
  mock: {policy: arithmetic, error_rate: 0.0}
buffer:
  batch_size: 3
  total_epochs: 1
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {prompt_key: question, response_key: answer}
      repeat_times: 2
      default_workflow_type: BoxedAccuracyOnly
plugins: [evalwf]
"""


def test_an_accuracy_only_workflow_migrated_and_explored(tmp_path: Path) -> None:
    folder = tmp_path / "evalwf"
    folder.mkdir()
    (folder / "workflow.py").write_text(EVAL_PLUGIN)
    migrated = CliRunner().invoke(app, ["migrate", str(folder)])
    assert migrated.exit_code == 0, migrated.output
    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for i in range(3):
            truth = str(i + 5) if i else "99"  # the first task's answer is wrong on purpose
            fh.write(json.dumps({"question": f"What is {i} + 5?", "answer": truth}) + "\n")
    (tmp_path / "cfg.yaml").write_text(CONFIG)
    result = CliRunner().invoke(
        app, ["explore", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(tmp_path / "run")]
    )
    assert result.exit_code == 0, result.output
    storage = SQLiteExperienceStorage(tmp_path / "run" / "buffer.db")
    try:
        rows = [exp.metrics for exp in storage.read()]
    finally:
        storage.close()
    # not repeatable: one reply per call, repeat_times calls per task
    assert len(rows) == 3 * 2
    assert sorted(r["accuracy"] for r in rows) == [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
