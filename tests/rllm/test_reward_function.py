"""rLLM's reward-function shape: ``reward_function(task, action).reward`` /
``.is_correct``, from ``reinforge.rllm.rewards`` and for registered reward names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reinforge.cli.main import app
from reinforge.rllm.engine import ModelOutput, RolloutEngine
from reinforge.rllm.rewards import RewardFunction, RewardInput, RewardOutput, zero_reward
from reinforge.rllm.rewards.countdown_reward import countdown_reward_fn
from reinforge.workflows.episode.callable_args import resolve_callable


def test_countdown_reward_fn_scores_like_rllm() -> None:
    task = {"question": "make 13", "target": 13, "nums": [3, 5, 2]}
    right = countdown_reward_fn(task, "<answer>3 * 5 - 2</answer>")
    assert isinstance(right, RewardOutput)
    assert (right.reward, right.is_correct) == (1.0, True)
    wrong = countdown_reward_fn(task, "<answer>3 + 5 + 2</answer>")
    assert (wrong.reward, wrong.is_correct) == (0.0, False)
    missing = countdown_reward_fn({"question": "?"}, "<answer>1</answer>")
    assert missing.reward == 0.0 and "error" in missing.metadata


def test_reward_types_and_protocol() -> None:
    assert isinstance(countdown_reward_fn, RewardFunction)
    assert zero_reward({}, "x") == RewardOutput(reward=0.0, metadata={})
    assert RewardInput(task_info={"a": 1}, action="b").action == "b"
    assert ModelOutput is not None and RolloutEngine is not None


def test_a_registered_reward_name_is_called_the_rllm_way() -> None:
    reward_function = resolve_callable("reward_function", "math_boxed_reward")
    out = reward_function({"question": "1 + 1?", "answer": "2"}, "so \\boxed{2}")
    assert isinstance(out, RewardOutput)
    assert out.is_correct and out.reward > 0
    assert set(out.metadata) >= {"accuracy"}


JUDGE = """
import asyncio

from reinforge.rllm.engine import ModelOutput, RolloutEngine
from reinforge.rllm.rewards.reward_fn import RewardFunction
from reinforge.rllm.types import Episode, Step, Trajectory
from reinforge.rllm.workflows.workflow import Workflow


class PickBestWorkflow(Workflow):
    def __init__(self, rollout_engine: RolloutEngine, n_tries: int = 2,
                 reward_function: RewardFunction = None, **kwargs):
        super().__init__(rollout_engine, **kwargs)
        self.n_tries = n_tries
        self.reward_function = reward_function

    async def _attempt(self, messages):
        output: ModelOutput = await self.rollout_engine.get_model_response(messages)
        return Trajectory(name="solver", steps=[Step(
            chat_completions=messages + [{"role": "assistant", "content": output.content}],
            action=output.content, model_output=output)])

    async def run(self, task: dict, uid: str, **kwargs) -> Episode:
        self.reset(task, uid)
        messages = [{"role": "user", "content": task["question"]}]
        trajectories = await asyncio.gather(*[self._attempt(messages) for _ in range(self.n_tries)])
        for traj in trajectories:
            result = self.reward_function(task, traj.steps[0].action)
            traj.steps[0].reward = traj.reward = result.reward
        best = max(trajectories, key=lambda t: t.reward)
        correct = self.reward_function(task, best.steps[0].action).is_correct
        return Episode(id=uid, task=task, trajectories=list(trajectories), is_correct=correct,
                       metrics={"best_acc": int(correct)})
"""

CONFIG = """
project: rllm
name: judge
plugins: [judge_flow]
model: {model_path: mock, engine: mock, mock: {policy: arithmetic, error_rate: 0.0}}
buffer:
  batch_size: 2
  total_steps: 1
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {prompt_key: question, response_key: answer}
      repeat_times: 2
      default_workflow_type: PickBestWorkflow
      workflow_args: {n_tries: 3, reward_function: math_boxed_reward}
"""


@pytest.mark.parametrize("command", [["explore"], ["run", "--set", "mode=explore"]])
def test_a_solver_judge_style_workflow_with_a_registered_reward(
    tmp_path: Path, command: list[str]
) -> None:
    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for i in range(2):
            fh.write(json.dumps({"question": f"What is {i} + 4?", "answer": str(i + 4)}) + "\n")
    (tmp_path / "judge_flow").mkdir()
    (tmp_path / "judge_flow" / "flow.py").write_text(JUDGE)
    (tmp_path / "cfg.yaml").write_text(CONFIG)
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        app, [*command, "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(run_dir)]
    )
    assert result.exit_code == 0, result.output
    from reinforge.buffer import SQLiteExperienceStorage

    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        rewards = [exp.reward for exp in storage.read()]
    finally:
        storage.close()
    assert len(rewards) == 2 * 2 * 3
    assert all(reward > 0 for reward in rewards)
