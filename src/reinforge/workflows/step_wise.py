"""Step-wise workflows: an agent loop whose model calls are collected step by step.

The user writes ``step(step_num)`` (one step of the agent: call the model, act in
the environment, return whether to go on), ``reward`` and ``max_step_num``. The base
runs the loop and, after each step, takes the model calls that step made out of the
rollout model's history (``extract_experience_from_history``), so an agent written
against any client, the OpenAI one included, yields token-exact experiences without
handing them over itself. Each experience gets ``eid.step`` = its step number.

Two ways to assign rewards, as in Trinity-RFT:

* ``StepWiseRewardWorkflow``: ``reward(exps, step_num)`` after every step; that
  step's experiences get it (per-step credit: train with the ``step_wise_grpo``
  algorithm, whose advantage uses these step rewards).
* ``RewardPropagationWorkflow``: ``reward(exps)`` once at the end, over all
  experiences of the run; every step gets that outcome (train with
  ``multi_step_grpo``).

A step that calls ``mark_state(observation)`` (the text of the environment state it
acts in) gets ``info["state_hash"]`` on its experiences: the key by which ``gigpo``
compares steps taken from the same state.

Both need the rollout model's history (``explorer.rollout_model.enable_history:
true``); they produce one run per call, so ``can_repeat`` stays False and the
explorer runs them ``repeat_times`` times.
"""

from __future__ import annotations

import abc
from typing import Any

from reinforge.core import Experience, Task
from reinforge.core.state_hash import STATE_HASH, state_hash
from reinforge.workflows.workflow import Workflow

HISTORY_CONFIG_KEY = "explorer.rollout_model.enable_history"


class HistoryDisabledError(ValueError):
    """A workflow that reads the model's call history got a model that keeps none."""


def require_history(model: Any, workflow: str) -> None:
    """Raise HistoryDisabledError unless ``model`` records its calls."""
    if not getattr(model, "enable_history", False):
        raise HistoryDisabledError(
            f"{workflow} collects experiences from the rollout model's history, but history "
            f"is off: set `{HISTORY_CONFIG_KEY}: true` in the config (or build the "
            "ModelWrapper with enable_history=True)"
        )


def openai_client(model: Any, method: str, workflow: str) -> Any:
    """``model.<method>()`` (an OpenAI client whose calls land in the history)."""
    factory = getattr(model, method, None)
    if factory is None:
        raise TypeError(
            f"{workflow} was asked for an OpenAI client but {type(model).__name__} has no "
            f"{method}(); pass use_openai_client=False and call the model directly"
        )
    return factory()


class _StepLoop(Workflow, abc.ABC):
    """What the four public classes share: history check, client, per-step collection."""

    can_repeat = False
    _client_method = "get_openai_client"

    def __init__(
        self,
        *,
        task: Task,
        model: Any,
        auxiliary_models: list[Any] | None = None,
        use_openai_client: bool = True,
    ) -> None:
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        name = type(self).__name__
        require_history(model, name)
        # An agent application written against the OpenAI API can use self.client as is.
        self.client: Any = (
            openai_client(model, self._client_method, name) if use_openai_client else None
        )
        self._state_hash: str | None = None

    @property
    @abc.abstractmethod
    def max_step_num(self) -> int:
        """The most steps one run may take."""

    def mark_state(self, observation: str) -> None:
        """Say which environment state the current step acts in (its observation text);
        the step's experiences get its hash in ``info["state_hash"]``."""
        self._state_hash = state_hash(observation)

    def _begin(self) -> None:
        # Calls made before the run (or by an earlier, failed attempt on this model)
        # belong to no step of this run.
        self.model.extract_experience_from_history()

    def _collect(self, step_num: int) -> list[Experience]:
        """The experiences of the model calls made during step ``step_num``."""
        exps = self.model.extract_experience_from_history()
        for exp in exps:
            exp.eid.step = step_num
            if self._state_hash is not None:
                exp.info[STATE_HASH] = self._state_hash
        self._state_hash = None
        return exps

    @abc.abstractmethod
    def _after_step(self, step_num: int) -> list[Experience]:
        """The experiences of step ``step_num``, rewarded as the subclass says."""

    def _finish(self, exps: list[Experience], env_steps: int) -> list[Experience]:
        for exp in exps:
            if exp.metrics is None:
                exp.metrics = {}
            exp.metrics["actual_env_steps"] = float(env_steps)
        return exps

    def _loop(self) -> list[Experience]:
        self._begin()
        experiences: list[Experience] = []
        env_steps = 0
        for step_num in range(self.max_step_num):
            go_on = self.step(step_num=step_num)
            env_steps = step_num + 1
            experiences.extend(self._after_step(step_num))
            if not go_on:
                break
        return self._finish(experiences, env_steps)

    async def _loop_async(self) -> list[Experience]:
        self._begin()
        experiences: list[Experience] = []
        env_steps = 0
        for step_num in range(self.max_step_num):
            go_on = await self.step(step_num=step_num)
            env_steps = step_num + 1
            experiences.extend(self._after_step(step_num))
            if not go_on:
                break
        return self._finish(experiences, env_steps)


class _StepWiseReward(_StepLoop):
    """Per-step rewards: ``reward(exps, step_num)`` after each step."""

    @abc.abstractmethod
    def reward(self, exps: list[Experience], step_num: int) -> float:
        """The reward of step ``step_num``, given the experiences it produced."""

    def _after_step(self, step_num: int) -> list[Experience]:
        exps = self._collect(step_num)
        reward = self.reward(exps, step_num=step_num)
        for exp in exps:
            exp.reward = reward
        return exps


class _RewardPropagation(_StepLoop):
    """One outcome reward, computed at the end and given to every step."""

    @abc.abstractmethod
    def reward(self, exps: list[Experience]) -> float:
        """The reward of the whole run, given all its experiences."""

    def _after_step(self, step_num: int) -> list[Experience]:
        return self._collect(step_num)

    def _finish(self, exps: list[Experience], env_steps: int) -> list[Experience]:
        exps = super()._finish(exps, env_steps)
        reward = self.reward(exps)
        for exp in exps:
            exp.reward = reward
        return exps


class StepWiseRewardWorkflow(_StepWiseReward):
    """Agent loop with a reward per step (see the module docstring)."""

    @abc.abstractmethod
    def step(self, step_num: int) -> bool:
        """Run one step of the agent (``self.client`` or ``self.model``); False ends the run."""

    def run(self) -> list[Experience]:
        return self._loop()


class RewardPropagationWorkflow(_RewardPropagation):
    """Agent loop whose final reward is given to every step (see the module docstring)."""

    @abc.abstractmethod
    def step(self, step_num: int) -> bool:
        """Run one step of the agent (``self.client`` or ``self.model``); False ends the run."""

    def run(self) -> list[Experience]:
        return self._loop()


class AsyncStepWiseRewardWorkflow(_StepWiseReward):
    """``StepWiseRewardWorkflow`` with ``async def step``; ``self.client`` is an AsyncOpenAI."""

    is_async = True
    _client_method = "get_openai_async_client"

    @abc.abstractmethod
    async def step(self, step_num: int) -> bool:
        """Run one step of the agent; False ends the run."""

    async def run_async(self) -> list[Experience]:
        return await self._loop_async()


class AsyncRewardPropagationWorkflow(_RewardPropagation):
    """``RewardPropagationWorkflow`` with ``async def step``; ``self.client`` is an AsyncOpenAI."""

    is_async = True
    _client_method = "get_openai_async_client"

    @abc.abstractmethod
    async def step(self, step_num: int) -> bool:
        """Run one step of the agent; False ends the run."""

    async def run_async(self) -> list[Experience]:
        return await self._loop_async()
