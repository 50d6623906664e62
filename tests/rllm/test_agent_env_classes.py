"""rLLM's agent/environment workflows: ``agent_cls`` / ``env_cls`` named by dotted path
in ``workflow_args``, and the ``env_agent_mappings`` such a workflow looks names up in."""

from __future__ import annotations

from reinforge.rllm.agents.agent import BaseAgent
from reinforge.rllm.environments.base.base_env import BaseEnv
from reinforge.rllm.trainer.env_agent_mappings import AGENT_CLASS_MAPPING, ENV_CLASS_MAPPING
from reinforge.workflows.episode.callable_args import resolve_callable_args


class CountingEnv(BaseEnv):
    def reset(self, task=None):
        return "start", {}

    def step(self, action):
        return "next", 1.0, True, {}


class TakesClasses:
    def __init__(self, agent_cls, env_cls, env_args=None, max_steps=5, **kwargs):
        self.agent_cls, self.env_cls = agent_cls, env_cls


def test_class_arguments_are_imported_by_dotted_path() -> None:
    args = resolve_callable_args(
        TakesClasses,
        {
            "agent_cls": "reinforge.rllm.agents.agent.BaseAgent",
            "env_cls": f"{__name__}.CountingEnv",
            "env_args": {"size": 2},
            "max_steps": 3,
        },
    )
    assert args["agent_cls"] is BaseAgent
    assert args["env_cls"] is CountingEnv
    assert args["env_args"] == {"size": 2} and args["max_steps"] == 3


def test_the_name_mappings_exist_and_start_empty() -> None:
    assert AGENT_CLASS_MAPPING == {} and ENV_CLASS_MAPPING == {}
