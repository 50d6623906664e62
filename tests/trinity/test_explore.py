"""A Trinity-RFT reward and workflow module, imports changed, run by ``reinforge explore``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from reinforge.cli.main import app

PLUGIN = '''
from reinforge.trinity.common.rewards import MathBoxedRewardFn
from reinforge.trinity.common.workflows import WORKFLOWS, SimpleWorkflow
from reinforge.trinity.utils.log import get_logger

logger = get_logger(__name__)


@WORKFLOWS.register_module("boxed_with_think_penalty")
class BoxedWithThinkPenalty(SimpleWorkflow):
    """Scores each reply with MathBoxedRewardFn and with_think, as Trinity's math workflows do."""

    def run(self):
        responses = self.model.chat(self.format_messages(), n=self.repeat_times)
        for response in responses:
            reward_dict = MathBoxedRewardFn()(
                response=response.response_text, truth=self.truth, with_think=True
            )
            response.metrics.update(reward_dict)
            response.reward = sum(reward_dict.values())
        return responses
'''

CONFIG = """
project: trinity
name: t
run_dir: run
model:
  engine: mock
  mock: {policy: arithmetic, error_rate: 0.0}
buffer:
  batch_size: 4
  total_epochs: 1
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {prompt_key: question, response_key: answer}
      repeat_times: 3
      default_workflow_type: boxed_with_think_penalty
      default_reward_fn_type: reinforge.trinity.common.rewards.MathBoxedRewardFn
plugins: [trinity_math.py]
"""


def test_trinity_reward_in_a_trinity_style_workflow(tmp_path: Path) -> None:
    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for i in range(4):
            fh.write(json.dumps({"question": f"What is {i} + 2?", "answer": str(i + 2)}) + "\n")
    (tmp_path / "trinity_math.py").write_text(PLUGIN)
    (tmp_path / "cfg.yaml").write_text(CONFIG)
    result = CliRunner().invoke(
        app, ["explore", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(tmp_path / "run")]
    )
    assert result.exit_code == 0, result.output
    with sqlite3.connect(tmp_path / "run" / "buffer.db") as db:
        rewards = [row[0] for row in db.execute("SELECT reward FROM experiences")]
    # the mock answers \\boxed{right} without a think block: accuracy 1, format -0.1
    assert len(rewards) == 4 * 3
    assert all(abs(r - 0.9) < 1e-6 for r in rewards), rewards


HELPERS = """
PROMPT = "Answer with the number only."


def score(reply: str, truth: str) -> float:
    return 1.0 if "{" + truth + "}" in reply else 0.0
"""

ADDER = """
from typing import List

from trinity.common.experience import Experience
from trinity.common.workflows.envs.adder.helpers import *
from trinity.common.workflows.workflow import WORKFLOWS, Task, Workflow


@WORKFLOWS.register_module("adder_workflow")
class AdderWorkflow(Workflow):
    can_repeat = True

    def run(self) -> List[Experience]:
        messages = [{"role": "system", "content": PROMPT},
                    {"role": "user", "content": self.task.task_desc}]
        replies = self.model.chat(messages, n=self.repeat_times)
        for reply in replies:
            reply.reward = score(reply.response_text, self.task.truth)
        return replies
"""


def test_an_upstream_folder_with_its_helper_migrates_and_explores(tmp_path: Path) -> None:
    folder = tmp_path / "adder"
    folder.mkdir()
    (folder / "helpers.py").write_text(HELPERS)
    (folder / "workflow.py").write_text(ADDER)
    migrated = CliRunner().invoke(app, ["migrate", str(folder)])
    assert migrated.exit_code == 0, migrated.output  # every import mapped
    assert "from .helpers import *" in (folder / "workflow.py").read_text()
    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for i in range(2):
            fh.write(json.dumps({"question": f"What is {i} + 2?", "answer": str(i + 2)}) + "\n")
    config = (
        CONFIG.replace("boxed_with_think_penalty", "AdderWorkflow")  # by its class name
        .replace("plugins: [trinity_math.py]", "plugins: [adder]")
        .replace("batch_size: 4", "batch_size: 2")
    )
    (tmp_path / "cfg.yaml").write_text(config)
    result = CliRunner().invoke(
        app, ["explore", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(tmp_path / "run")]
    )
    assert result.exit_code == 0, result.output
    with sqlite3.connect(tmp_path / "run" / "buffer.db") as db:
        rewards = [row[0] for row in db.execute("SELECT reward FROM experiences")]
    assert rewards == [1.0] * 6  # the arithmetic mock answers right; 2 tasks x 3 samples
