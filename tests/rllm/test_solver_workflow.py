"""An rLLM-style solver workflow (timing mixin, a reward function named in YAML), imports
changed only, run by ``reinforge explore`` and ``reinforge run --set mode=explore``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reinforge.cli.main import app

SOLVER = """
import re

from reinforge.rllm.agents.agent import Step, Trajectory
from reinforge.rllm.engine.rollout import RolloutEngine
from reinforge.rllm.workflows import TimingTrackingMixin
from reinforge.rllm.workflows.workflow import TerminationEvent, TerminationReason, Workflow


class SolverWorkflow(TimingTrackingMixin, Workflow):
    def __init__(self, rollout_engine: RolloutEngine, reward_function=None, **kwargs):
        super().__init__(rollout_engine, **kwargs)
        self.reward_function = reward_function

    async def run(self, task: dict, uid: str, **kwargs):
        self.reset(task, uid)
        messages = [{"role": "user", "content": task["question"]}]
        output = await self.timed_llm_call(messages)
        step = Step.from_model_output(output, messages, action=output.content)
        step.reward = self.reward_function(task, output.content)
        step.done = True
        self.commit(name="solver", trajectory=Trajectory(name="solver", steps=[step]))
        raise TerminationEvent(TerminationReason.ENV_DONE)
"""

REWARDS = """
import re


def boxed_equals_answer(task, action):
    found = re.findall(r"\\\\boxed\\{([^}]*)\\}", action or "")
    return float(bool(found) and found[-1].strip() == str(task["answer"]))
"""

CONFIG = """
project: rllm
name: t
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
      default_workflow_type: SolverWorkflow
      workflow_args:
        reward_function: REWARD
plugins: [solver_flow]
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for i in range(3):
            fh.write(json.dumps({"question": f"What is {i} + 5?", "answer": str(i + 5)}) + "\n")
    (tmp_path / "solver_flow").mkdir()
    (tmp_path / "solver_flow" / "solver.py").write_text(SOLVER)
    (tmp_path / "solver_flow" / "my_rewards.py").write_text(REWARDS)
    return tmp_path


def _stored(run_dir: Path) -> list[tuple[float, dict]]:
    from reinforge.buffer import SQLiteExperienceStorage

    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        return [(exp.reward, exp.info) for exp in storage.read()]
    finally:
        storage.close()


@pytest.mark.parametrize("command", [["explore"], ["run", "--set", "mode=explore"]])
def test_solver_with_a_dotted_reward_function(project: Path, command: list[str]) -> None:
    cfg = project / "cfg.yaml"
    cfg.write_text(CONFIG.replace("REWARD", "solver_flow.my_rewards.boxed_equals_answer"))
    run_dir = project / "run"
    result = CliRunner().invoke(app, [*command, "-c", str(cfg), "--run-dir", str(run_dir)])
    assert result.exit_code == 0, result.output
    stored = _stored(run_dir)
    assert len(stored) == 3 * 2
    assert all(reward == 1.0 for reward, _ in stored)
    for _, info in stored:
        assert set(info["timing"]) >= {"llm_time", "env_time", "reward_time", "total_time"}
        assert info["timing"]["total_time"] >= info["timing"]["llm_time"] >= 0.0
        assert info["step_timing"]["start_timestamp"] is not None


def test_an_unknown_reward_function_is_a_clear_error(project: Path) -> None:
    from reinforge.workflows.episode.callable_args import resolve_callable

    with pytest.raises(ValueError, match=r"workflow_args\.reward_function: 'no_such_reward'"):
        resolve_callable("reward_function", "no_such_reward")
    assert callable(resolve_callable("reward_function", "math_boxed_reward"))
