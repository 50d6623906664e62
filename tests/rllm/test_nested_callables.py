"""A callable nested in ``workflow_args`` is named in YAML by dotted path, as rLLM
passes ``env_args={"reward_fn": countdown_reward_fn}`` to its workflows in Python: a
string under a key ending in ``_fn`` (``_func``, ``_function``, ``_callable``, ``_cls``,
``_class``) is resolved at any depth of dicts and lists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reinforge.cli.main import app
from reinforge.rllm.rewards.countdown_reward import countdown_reward_fn
from reinforge.workflows.episode.callable_args import resolve_callable_args
from reinforge.workflows.episode.reward_output import EpisodeRewardFunction

MIRROR_REWARD = "reinforge.rllm.rewards.countdown_reward.countdown_reward_fn"

FLOW = """
from reinforge.rllm.agents.agent import Step, Trajectory
from reinforge.rllm.environments.base.base_env import BaseEnv
from reinforge.rllm.workflows.workflow import TerminationEvent, TerminationReason, Workflow


class CountdownEnv(BaseEnv):
    def __init__(self, task=None, reward_fn=None, max_steps=1):
        self.task, self.reward_fn, self.max_steps = task, reward_fn, max_steps

    def reset(self, task=None):
        return self.task, {}

    def step(self, action):
        out = self.reward_fn(task_info=self.task, action=action)
        return {}, out.reward, True, {"metadata": out.metadata}

    @staticmethod
    def from_dict(info):
        return CountdownEnv(**info)


class CountdownEnvWorkflow(Workflow):
    def __init__(self, rollout_engine, env_cls=None, env_args=None, **kwargs):
        super().__init__(rollout_engine, **kwargs)
        self.env_cls, self.env_args = env_cls, env_args or {}

    async def run(self, task: dict, uid: str, **kwargs):
        self.reset(task, uid)
        env = self.env_cls(task=task, **self.env_args)
        messages = [{"role": "user", "content": task["question"]}]
        output = await self.rollout_engine.get_model_response(messages)
        step = Step.from_model_output(output, messages, action=output.content)
        _, step.reward, step.done, _ = env.step(output.content)
        self.commit(name="solver", trajectory=Trajectory(name="solver", steps=[step]))
        raise TerminationEvent(TerminationReason.ENV_DONE)
"""

REWARDS = """
from reinforge.rllm.rewards import RewardOutput


def half_credit(task_info, action):
    return RewardOutput(reward=0.5, is_correct=False)
"""

CONFIG = """
project: rllm
name: nested
model:
  engine: mock
  mock: {replies: ["<answer>3 * 5 - 2</answer>"]}
buffer:
  batch_size: 2
  total_epochs: 1
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {prompt_key: question, response_key: target}
      repeat_times: 2
      default_workflow_type: CountdownEnvWorkflow
      workflow_args:
        env_cls: countdown_flow.flow.CountdownEnv
        env_args:
          max_steps: 1
          reward_fn: REWARD
plugins: [countdown_flow]
"""


class Takes:
    def __init__(self, rollout_engine=None, env_args=None, agent_args=None, mode=None):
        pass


def test_dotted_paths_resolve_at_any_depth_by_key_name() -> None:
    args = {
        "env_args": {"reward_fn": MIRROR_REWARD, "size": 3, "name": "countdown"},
        "agent_args": {"tools": [{"score_fn": "math_boxed_reward", "label": "math_boxed_reward"}]},
        "mode": "reinforge.rllm.rewards.countdown_reward.countdown_reward_fn",
    }
    out = resolve_callable_args(Takes, args)
    assert out["env_args"] == {"reward_fn": countdown_reward_fn, "size": 3, "name": "countdown"}
    (tool,) = out["agent_args"]["tools"]
    assert isinstance(tool["score_fn"], EpisodeRewardFunction)  # a registered RewardFn
    assert tool["label"] == "math_boxed_reward"  # not a callable's key: stays text
    assert out["mode"] == args["mode"]  # nor at the top level
    assert args["env_args"]["reward_fn"] == MIRROR_REWARD  # the task's own args unchanged


def test_a_nested_name_that_names_nothing_says_where_it_is() -> None:
    with pytest.raises(ValueError, match=r"workflow_args\.env_args\.reward_fn: 'no\.such\.fn'"):
        resolve_callable_args(Takes, {"env_args": {"reward_fn": "no.such.fn"}})
    with pytest.raises(ValueError, match=r"workflow_args\.agent_args\.tools\[0\]\.score_fn"):
        resolve_callable_args(Takes, {"agent_args": {"tools": [{"score_fn": "nope"}]}})


@pytest.mark.parametrize(
    ("reward", "expected"),
    [(MIRROR_REWARD, 1.0), ("countdown_flow.rewards.half_credit", 0.5)],
    ids=["mirror", "user_module"],
)
def test_env_args_reward_fn_named_in_yaml_runs(
    tmp_path: Path, reward: str, expected: float
) -> None:
    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for target in (13, 13):
            row = {"question": "Make 13 from 3, 5, 2", "target": target, "nums": [3, 5, 2]}
            fh.write(json.dumps(row) + "\n")
    (tmp_path / "countdown_flow").mkdir()
    (tmp_path / "countdown_flow" / "flow.py").write_text(FLOW)
    (tmp_path / "countdown_flow" / "rewards.py").write_text(REWARDS)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(CONFIG.replace("REWARD", reward))
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["explore", "-c", str(cfg), "--run-dir", str(run_dir)])
    assert result.exit_code == 0, result.output
    from reinforge.buffer import SQLiteExperienceStorage

    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        rewards = [exp.reward for exp in storage.read()]
    finally:
        storage.close()
    assert rewards == [expected] * 4
