"""Trinity-RFT's workflow development guide, step by step, on reinforge.

A workflow in the guide's style (its own code: a capital-city quiz) is imported from
the ``reinforge.trinity`` mirror and used as the guide says: the ``Task`` fields it
reads, ``ModelWrapper.chat`` with ``n`` and ``temperature`` from ``rollout_args``,
``Experience(tokens, prompt_length, reward, logprobs)``, registration with
``WORKFLOWS.register_module``, ``resettable`` / ``reset`` for reuse, the OpenAI client
and its ``model_path``, the guide's taskset YAML keys, and ``trinity run --config``,
which becomes ``reinforge run --config``.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from reinforge.cli.main import app
from reinforge.models.engines.mock import MockEngine
from reinforge.trinity.common.config import FormatConfig, GenerationConfig
from reinforge.trinity.common.experience import Experience
from reinforge.trinity.common.models.model import ModelWrapper
from reinforge.trinity.common.workflows import Task
from reinforge.trinity.common.workflows.workflow import WORKFLOWS
from reinforge.workflows.workflow import can_reuse

PLUGIN = """
from typing import List

from reinforge.trinity.common.experience import Experience
from reinforge.trinity.common.models.model import ModelWrapper
from reinforge.trinity.common.workflows.workflow import WORKFLOWS, Task, Workflow


@WORKFLOWS.register_module("capital_quiz_workflow")
class CapitalQuiz(Workflow):
    def __init__(self, task: Task, model: ModelWrapper, auxiliary_models: List):
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        self.reset(task)
        self.rollout_args = task.rollout_args

    def score(self, reply: str) -> float:
        return 1.0 if reply.strip().lower() == self.city.lower() else 0.0

    def run(self) -> List[Experience]:
        messages = [{"role": "user", "content": f"Capital of {self.country}?"}]
        replies = self.model.chat(
            messages, n=self.rollout_args.n, temperature=self.rollout_args.temperature
        )
        return [
            Experience(
                tokens=r.tokens,
                prompt_length=r.prompt_length,
                reward=self.score(r.response_text),
                logprobs=r.logprobs,
            )
            for r in replies
        ]

    def resettable(self):
        return True

    def reset(self, task: Task):
        self.country = task.raw_task.get(task.format_args.prompt_key)
        self.city = task.raw_task.get(task.format_args.response_key)
"""

ROWS = [
    {"country": "France", "city": "Paris"},
    {"country": "Japan", "city": "Tokyo"},
]

CONFIG = """
project: guide
name: quiz
mode: explore
model:
  engine: mock
  mock:
    replies: {"France": "Paris"}
    default_reply: "Rome"
buffer:
  batch_size: 2
  total_epochs: 1
  explorer_input:
    taskset:
      default_workflow: "capital_quiz_cli_workflow"
      path: ${oc.env:TRINITY_TASKSET_PATH}
      format:
        prompt_key: "country"
        response_key: "city"
      rollout_args:
        temperature: 1.0
      repeat_times: 3
plugins: [quiz_cli.py]
"""


def _load_plugin(tmp_path: Path) -> type:
    from reinforge.launcher.plugins import load_plugins

    (tmp_path / "quiz.py").write_text(PLUGIN)
    load_plugins(["quiz.py"], str(tmp_path))
    return WORKFLOWS.get("capital_quiz_workflow")


def _task(row: dict, n: int = 2) -> Task:
    return Task(
        workflow="capital_quiz_workflow",
        format_args=FormatConfig(prompt_key="country", response_key="city"),
        rollout_args=GenerationConfig(n=n, temperature=1.0),
        raw_task=row,
    )


def test_model_chat_returns_experiences_with_the_fields_the_guide_reads() -> None:
    model = ModelWrapper(MockEngine(replies=["Paris"]))
    replies = model.chat([{"role": "user", "content": "Capital of France?"}], n=2)
    assert len(replies) == 2
    for r in replies:
        assert isinstance(r, Experience) and r.response_text == "Paris"
        assert len(r.tokens) == r.prompt_length + len(r.logprobs)
    rebuilt = Experience(
        tokens=replies[0].tokens, prompt_length=replies[0].prompt_length, reward=1.0,
        logprobs=replies[0].logprobs,
    )  # fmt: skip
    assert rebuilt.reward == 1.0 and rebuilt.response_length == replies[0].response_length


def test_the_openai_client_names_its_model() -> None:
    client = ModelWrapper(MockEngine(replies=["Paris"])).get_openai_client()
    assert client.models.list().data[0].id == client.model_path
    reply = client.chat.completions.create(
        model=client.model_path, messages=[{"role": "user", "content": "Capital of France?"}]
    )
    assert reply.choices[0].message.content == "Paris"


def test_registered_workflow_runs_resets_and_is_reused(tmp_path: Path) -> None:
    quiz = _load_plugin(tmp_path)
    model = ModelWrapper(MockEngine(replies={"France": "Paris"}, default_reply="Rome"))
    task = _task(ROWS[0])
    assert task.workflow is quiz  # the registered name, resolved as in Trinity
    wf = task.to_workflow(model)
    assert [e.reward for e in wf.run()] == [1.0, 1.0]
    assert can_reuse(wf)  # the guide's resettable() method
    wf.reset(_task(ROWS[1]))
    assert [e.reward for e in wf.run()] == [0.0, 0.0]


def test_guide_yaml_runs_with_reinforge_run_config(tmp_path: Path, monkeypatch) -> None:
    rows = tmp_path / "capitals.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    monkeypatch.setenv("TRINITY_TASKSET_PATH", str(rows))
    # its own name: the other tests of this process registered the first one
    (tmp_path / "quiz_cli.py").write_text(
        PLUGIN.replace("capital_quiz_workflow", "capital_quiz_cli_workflow")
    )
    (tmp_path / "cfg.yaml").write_text(CONFIG)
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["run", "--config", str(tmp_path / "cfg.yaml"), "--run-dir", str(run_dir)]
    )
    assert result.exit_code == 0, result.output
    with sqlite3.connect(run_dir / "buffer.db") as db:
        rewards = sorted(r for (r,) in db.execute("SELECT reward FROM experiences"))
    # not repeatable: the explorer runs each task repeat_times (3) times, one sample each
    assert rewards == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
