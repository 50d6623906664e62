"""Workflows written the way Trinity-RFT users write them, run by ``reinforge explore``.

Each treats ``rollout_args`` as Trinity's workflows do: ``asdict(task.rollout_args)``
in a ``reset`` that does not call the base class, ``**self.rollout_args`` into the
model, ``.copy()`` then ``["n"] = 1`` for one reply per call, ``self.rollout_args.n``
as the number of rollouts, a read-only ``rollout_args`` property, and ``self.logger``.
Each must give ``repeat_times`` experiences per task with the reward its code intends.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reinforge.cli.main import app

# one plugin per test, each registering one workflow: a name registers once per process
HEADER = """
from dataclasses import asdict
from typing import List

from reinforge.trinity.common.experience import Experience
from reinforge.trinity.common.rewards import MathBoxedRewardFn
from reinforge.trinity.common.workflows.workflow import WORKFLOWS, SimpleWorkflow, Task, Workflow
"""

WORKFLOWS = {}
WORKFLOWS["boxed_asdict_reset"] = '''
@WORKFLOWS.register_module("boxed_asdict_reset")
class BoxedAsdictReset(SimpleWorkflow):
    """A reset of its own (no super), rollout_args kept as a dict, all replies in one call."""

    def reset(self, task: Task):
        self.format_args = task.format_args
        self.system_prompt = task.format_args.system_prompt
        self.reply_prefix = task.format_args.reply_prefix
        self.raw_task = task.raw_task
        self.task_desc = task.task_desc
        self.truth = task.truth
        self.rollout_args = asdict(task.rollout_args)
        self.with_think = task.workflow_args.get("with_think", False)
        self.reward_fn = MathBoxedRewardFn()

    def run(self) -> List[Experience]:
        self.logger.debug("start chat")
        responses = self.model.chat(self.format_messages(), **self.rollout_args)
        for i, response in enumerate(responses):
            reward_dict = self.reward_fn(
                response=response.response_text, truth=self.truth, with_think=self.with_think
            )
            response.metrics.update(reward_dict)
            response.reward = sum(reward_dict.values())
            response.eid.run = i + self.run_id_base
        return responses
'''

WORKFLOWS["boxed_one_reply_per_call"] = '''
@WORKFLOWS.register_module("boxed_one_reply_per_call")
class BoxedOneReplyPerCall(Workflow):
    """rollout_args.n rollouts, each from a copy of rollout_args with n set to 1."""

    can_repeat = True

    def __init__(self, *, task: Task, model, auxiliary_models=None):
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        self.question = task.raw_task[task.format_args.prompt_key]
        self.truth = task.truth
        self.bonus = self.rollout_args.get("reward_bonus", 0.0)  # not a sampling key

    def set_repeat_times(self, repeat_times, run_id_base):
        self.repeat_times = repeat_times
        self.task.rollout_args.n = repeat_times
        self.run_id_base = run_id_base

    def run(self) -> List[Experience]:
        messages = [{"role": "user", "content": self.question}]
        experiences = []
        for i in range(self.rollout_args.n):
            rollout_args = self.rollout_args.copy()
            rollout_args["n"] = 1
            (response,) = self.model.chat(messages, **rollout_args)
            reward_dict = MathBoxedRewardFn()(response=response.response_text, truth=self.truth)
            response.reward = sum(reward_dict.values()) + self.bonus - 0.25 * i
            response.eid.run = i + self.run_id_base
            experiences.append(response)
        self.logger.info("%d rollouts of %s", len(experiences), self.question)
        return experiences
'''

WORKFLOWS["boxed_property_args"] = '''
@WORKFLOWS.register_module("boxed_property_args")
class BoxedPropertyArgs(SimpleWorkflow):
    """rollout_args as a read-only property, as Trinity's own workflows define it."""

    @property
    def rollout_args(self):
        return asdict(self.task.rollout_args)

    def run(self) -> List[Experience]:
        kwargs = {**self.rollout_args, "temperature": 0.5}
        return self.score(self.model.chat(self.format_messages(), **kwargs))
'''

CONFIG = """
project: trinity
name: t
run_dir: run
model:
  engine: mock
  mock: {{policy: arithmetic, error_rate: 0.0}}
buffer:
  batch_size: 4
  total_epochs: 1
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {{prompt_key: question, response_key: answer}}
      rollout_args: {{temperature: 0.8, max_tokens: 64}}
      repeat_times: 3
      workflow_args: {{with_think: true}}
      default_workflow_type: {workflow}
      default_reward_fn_type: reinforge.trinity.common.rewards.MathBoxedRewardFn
plugins: [{workflow}.py]
"""

TASKS = 4
REPEAT_TIMES = 3


def explore(tmp_path: Path, workflow: str) -> list[tuple[str, int, float]]:
    """Run ``reinforge explore`` on four arithmetic tasks; (task, run, reward) per experience."""
    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for i in range(TASKS):
            fh.write(json.dumps({"question": f"What is {i} + 2?", "answer": str(i + 2)}) + "\n")
    (tmp_path / f"{workflow}.py").write_text(HEADER + WORKFLOWS[workflow])
    (tmp_path / "cfg.yaml").write_text(CONFIG.format(workflow=workflow))
    result = CliRunner().invoke(
        app, ["explore", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(tmp_path / "run")]
    )
    assert result.exit_code == 0, result.output
    with sqlite3.connect(tmp_path / "run" / "buffer.db") as db:
        return list(db.execute("SELECT task, run, reward FROM experiences"))


def assert_repeat_times_per_task(rows: list[tuple[str, int, float]]) -> None:
    assert len(rows) == TASKS * REPEAT_TIMES
    runs: dict[str, list[int]] = {}
    for task, run, _ in rows:
        runs.setdefault(task, []).append(run)
    assert len(runs) == TASKS
    assert all(sorted(r) == list(range(REPEAT_TIMES)) for r in runs.values()), runs


def test_asdict_in_an_own_reset_and_spread_into_chat(tmp_path: Path) -> None:
    rows = explore(tmp_path, "boxed_asdict_reset")
    assert_repeat_times_per_task(rows)
    # the mock answers \\boxed{right} without a think block: accuracy 1, with_think -0.1
    assert all(reward == pytest.approx(0.9) for _, _, reward in rows), rows


def test_a_copy_with_n_set_to_one_per_call(tmp_path: Path) -> None:
    rows = explore(tmp_path, "boxed_one_reply_per_call")
    assert_repeat_times_per_task(rows)
    # accuracy 1 for every reply, less 0.25 per earlier rollout of the same task
    assert Counter(round(reward, 6) for _, _, reward in rows) == Counter(
        {1.0: TASKS, 0.75: TASKS, 0.5: TASKS}
    )
    assert all(reward == pytest.approx(1.0 - 0.25 * run) for _, run, reward in rows)


def test_a_read_only_rollout_args_property(tmp_path: Path) -> None:
    rows = explore(tmp_path, "boxed_property_args")
    assert_repeat_times_per_task(rows)
    # scored by the taskset's MathBoxedRewardFn without with_think: accuracy 1, no penalty
    assert all(reward == pytest.approx(1.0) for _, _, reward in rows), rows
