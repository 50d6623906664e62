"""rLLM 0.3 flows named in YAML: by dotted path, by ``register=`` name, and through
``AgentFlowWorkflow``'s ``workflow_args.agent_flow`` (a class-based flow); a Task
holding a flow's workflow serialises to a path that resolves back to it; and
``reinforge migrate`` maps rLLM 0.3's imports of this API without a hand edit."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.import_rewriter import rewrite_source
from reinforge.cli.main import app
from reinforge.core import Task
from reinforge.rllm.agentflow_runner import AgentFlowWorkflow
from reinforge.workflows import WORKFLOWS

#: an rLLM 0.3 file, imports as upstream writes them
UPSTREAM = """
import rllm
from openai import AsyncOpenAI
from rllm.eval.types import EvalOutput
from rllm.types import AgentConfig, Episode, Step, Task, Trajectory


@rllm.rollout(name="adder", register="yaml_test_adder")
async def adder_flow(task: Task, config: AgentConfig) -> Episode:
    client = AsyncOpenAI(base_url=config.base_url, api_key="EMPTY")
    messages = [{"role": "user", "content": task.instruction}]
    reply = await client.chat.completions.create(model=config.model, messages=messages)
    content = reply.choices[0].message.content
    step = Step(chat_completions=messages, model_response=content)
    return Episode(trajectories=[Trajectory(name="adder", steps=[step])], artifacts={"answer": content})


class AdderFlow:
    def run(self, task, config):
        from openai import OpenAI

        client = OpenAI(base_url=config.base_url, api_key="EMPTY")
        messages = [{"role": "user", "content": task.instruction}]
        reply = client.chat.completions.create(model=config.model, messages=messages)
        return Trajectory(steps=[Step(output=reply.choices[0].message.content)])


@rllm.evaluator
def adder_eval(task: dict, episode: Episode) -> EvalOutput:
    answer = str(episode.artifacts.get("answer") or episode.trajectories[0].steps[0].output)
    ok = answer.endswith("\\\\boxed{" + str(task["answer"]) + "}.")
    return EvalOutput(reward=1.0 if ok else 0.0, is_correct=ok)
"""

CONFIG = """
project: rllm
name: af
plugins: [flows]
model: {engine: mock, mock: {policy: arithmetic, error_rate: 0.0}}
buffer:
  batch_size: 2
  total_epochs: 1
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {prompt_key: question, response_key: answer}
      repeat_times: 3
      default_workflow_type: WORKFLOW
      workflow_args: ARGS
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    result = rewrite_source(UPSTREAM)
    assert result.unmapped == [], result.unmapped
    assert "import reinforge.rllm" in result.new
    assert "from reinforge.rllm.types import AgentConfig" in result.new
    assert "from reinforge.rllm.eval.types import EvalOutput" in result.new
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "flow_adder.py").write_text(result.new)
    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for i in range(2):
            fh.write(json.dumps({"question": f"What is {i} + 3?", "answer": str(i + 3)}) + "\n")
    return tmp_path


@pytest.mark.parametrize(
    ("workflow", "args", "name"),
    [
        ("flows.flow_adder.adder_flow", "{evaluator: flows.flow_adder.adder_eval}", "adder"),
        ("yaml_test_adder", "{evaluator: flows.flow_adder.adder_eval}", "adder"),
        (
            "reinforge.rllm.AgentFlowWorkflow",
            "{agent_flow: flows.flow_adder.AdderFlow, evaluator: math_boxed_reward}",
            "default_traj_name",
        ),
    ],
)
def test_a_flow_named_in_yaml_explores(project: Path, workflow: str, args: str, name: str) -> None:
    cfg = project / "cfg.yaml"
    cfg.write_text(CONFIG.replace("WORKFLOW", workflow).replace("ARGS", args))
    run_dir = project / "run"
    result = CliRunner().invoke(app, ["explore", "-c", str(cfg), "--run-dir", str(run_dir)])
    assert result.exit_code == 0, (result.exception, result.output[-3000:])
    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        exps = storage.read()
    finally:
        storage.close()
    assert len(exps) == 2 * 3
    assert all(e.reward and e.reward > 0 for e in exps)
    assert {e.info["trajectory_name"] for e in exps} == {name}
    assert {e.response_text for e in exps} == {
        "The answer is \\boxed{3}.",
        "The answer is \\boxed{4}.",
    }


def test_a_task_of_a_flow_serialises_to_its_dotted_path(project: Path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(project))
    try:
        cls = WORKFLOWS.get("flows.flow_adder.adder_flow")
        assert issubclass(cls, AgentFlowWorkflow)
        task = Task(workflow=cls, raw_task={"question": "What is 1 + 3?", "answer": "4"})
        plain = task.to_dict()
        assert plain["workflow"] == "flows.flow_adder.adder_flow"
        assert Task.from_dict(plain).workflow_cls is cls
    finally:
        for module in [m for m in sys.modules if m == "flows" or m.startswith("flows.")]:
            del sys.modules[module]
