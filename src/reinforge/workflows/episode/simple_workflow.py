"""rLLM's ``SimpleWorkflow``: one model call per episode, scored by a reward function.

rLLM (``rllm.workflows.simple_workflow``, v0.2 to v0.3) ships this as the smallest
episode workflow, and many legacy workflows subclass it or copy its ``run``. Its
shape, kept here so those workflows move over by their imports alone:

* the prompt is the row's ``messages`` (a chat), else its ``question``, ``prompt`` or
  ``problem`` as one user message (checked in that order); a row with none of them
  fails the episode (``ValueError``, an ``error`` episode here);
* one call, ``rollout_engine.get_model_response(messages, application_id=uid, ...)``;
* ``reward_function(task, Action(action=reply content))`` scores it; its ``reward``
  goes on the one step, which keeps the conversation with the reply (and its
  reasoning), the reasoning as ``thought`` and the model output (its token ids);
* the step is committed as the agent's trajectory, and the episode ends as
  ``max_response_length_exceeded`` when the reply was cut by the length limit, else
  ``env_done``. The trajectory reward is then the step's (the episode workflow's
  ``compute_trajectory_reward``), and correctness follows it, as in rLLM.

``SimpleAgent`` is the agent it records with: a trajectory and nothing else (its
updates do nothing; the workflow writes the step itself).
"""

from __future__ import annotations

from typing import Any

from reinforge.core.episode import (
    Action,
    Episode,
    Step,
    TerminationEvent,
    TerminationReason,
    Trajectory,
)
from reinforge.workflows.episode.agent import BaseAgent
from reinforge.workflows.episode.reward_output import RewardFunction
from reinforge.workflows.episode.rollout_engine import RolloutEngine
from reinforge.workflows.episode.workflow import EpisodeWorkflow

__all__ = ["SimpleAgent", "SimpleWorkflow", "prompt_messages"]

#: row keys that hold the prompt, in the order rLLM reads them
PROMPT_KEYS = ("question", "prompt", "problem")


class SimpleAgent(BaseAgent):
    """An agent that only holds a trajectory: the workflow appends its steps."""

    def __init__(self, **kwargs: Any) -> None:
        self._trajectory = Trajectory()

    def reset(self) -> None:
        self._trajectory = Trajectory()

    def update_from_model(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to do: ``SimpleWorkflow`` records the step itself."""

    def update_from_env(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to do: there is no environment."""

    @property
    def trajectory(self) -> Trajectory:
        return self._trajectory


def prompt_messages(task: dict[str, Any]) -> list[dict[str, Any]]:
    """The chat a row asks: its ``messages``, else its first prompt key as a user turn."""
    if task.get("messages") is not None:
        return task["messages"]
    for key in PROMPT_KEYS:
        if task.get(key) is not None:
            return [{"role": "user", "content": task[key]}]
    raise ValueError("No question, problem, messages, or prompt key found in task")


class SimpleWorkflow(EpisodeWorkflow):
    """One call, one reward (see the module docstring).

    ``reward_function`` is rLLM's ``f(task, action) -> RewardOutput``; in a taskset's
    ``workflow_args`` it may be a dotted path or a registered reward function's name.
    """

    def __init__(
        self, rollout_engine: RolloutEngine, reward_function: RewardFunction, **kwargs: Any
    ) -> None:
        super().__init__(rollout_engine, **kwargs)
        self.agent = SimpleAgent()
        self.reward_function = reward_function

    async def run(self, task: dict[str, Any], uid: str, **kwargs: Any) -> Episode | None:
        self.reset(task, uid)
        messages = prompt_messages(task)
        output = await self.rollout_engine.get_model_response(
            messages, application_id=uid, **kwargs
        )
        action = Action(action=output.content)
        verdict = self.reward_function(task, action)
        reply = {"role": "assistant", "content": output.content, "reasoning": output.reasoning}
        self.agent.trajectory.steps.append(
            Step(
                chat_completions=[*messages, reply],
                thought=output.reasoning or "",
                action=action,
                reward=verdict.reward,
                model_output=output,
            )
        )
        self.commit(agent=self.agent, reset=True)
        if output.finish_reason == "length":
            raise TerminationEvent(TerminationReason.MAX_RESPONSE_LENGTH_EXCEEDED)
        raise TerminationEvent(TerminationReason.ENV_DONE)
