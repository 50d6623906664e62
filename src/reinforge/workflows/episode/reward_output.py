"""rLLM's reward-function shape: ``f(task_info, action) -> RewardOutput``.

rLLM workflows call their ``reward_function`` with the task dict and the parsed action
and read ``.reward`` and ``.is_correct`` from what it returns. These types let such a
function be written against reinforge, and ``EpisodeRewardFunction`` lets a registered
reinforge ``RewardFn`` (which scores ``response`` against ``truth`` and returns named
components) be handed to an rLLM workflow in its place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from reinforge.rewards import RewardFn, call_reward_fn

TRUTH_KEYS = ("ground_truth", "answer", "solution", "target")
PROMPT_KEYS = ("question", "problem", "prompt")


@dataclass(kw_only=True)
class RewardInput:
    """What a reward function scores: the task dict and the agent's action."""

    task_info: dict
    action: str


@dataclass(kw_only=True)
class RewardOutput:
    """A reward function's verdict: the scalar reward, whether it is correct, details."""

    reward: float
    metadata: dict = field(default_factory=dict)
    is_correct: bool | None = None


@runtime_checkable
class RewardFunction(Protocol):
    """Anything called as ``f(task_info, action)`` that returns a ``RewardOutput``."""

    def __call__(self, task_info: dict, action: str) -> RewardOutput: ...


def zero_reward(task_info: dict, action: str) -> RewardOutput:
    """A placeholder reward: always 0."""
    return RewardOutput(reward=0.0, metadata={})


def _first(task_info: dict, keys: tuple[str, ...]) -> Any:
    return next((task_info[key] for key in keys if task_info.get(key) is not None), None)


class EpisodeRewardFunction:
    """A reinforge ``RewardFn`` called the rLLM way.

    The truth is the task's first of ``ground_truth``, ``answer``, ``solution``,
    ``target``; the prompt its ``question``/``problem``/``prompt``; the whole task is
    passed as ``raw_task``. The reward is the sum of the components, correct when it is
    above 0; the components are the metadata.
    """

    def __init__(self, reward_fn: RewardFn) -> None:
        self.reward_fn = reward_fn

    def __call__(self, task_info: dict, action: Any) -> RewardOutput:
        response = getattr(action, "action", action)
        components = call_reward_fn(
            self.reward_fn,
            "" if response is None else str(response),
            truth=_first(task_info, TRUTH_KEYS),
            optional={"prompt": _first(task_info, PROMPT_KEYS), "raw_task": task_info},
        )
        total = float(sum(components.values()))
        return RewardOutput(reward=total, metadata=dict(components), is_correct=total > 0)
