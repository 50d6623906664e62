"""Train an agent written as an AgentScope workflow function, unchanged.

Two adapters, as in Trinity-RFT, registered under Trinity's names:

* ``agentscope_workflow_adapter``: ``workflow_args.workflow_func`` is an async
  function ``(raw_task, chat_model) -> float``. ``chat_model`` is an AgentScope
  ``OpenAIChatModel`` answered by the policy; the returned number is the reward.
* ``agentscope_workflow_adapter_v1``: the function takes ``task`` and ``model``, plus
  ``auxiliary_models`` (AgentScope chat models by name) and ``logger`` when its
  signature names them, and returns a ``WorkflowOutput``. ``workflow_args.judge_func``
  (optional) ``(task, response, [auxiliary_models], [logger]) -> JudgeOutput`` then
  gives the reward from the output's ``response``. Metrics from both go on the
  run's last experience.

Either function is given as a callable or a dotted path (``package.module.function``
or ``package.module:function``; a file listed under ``plugins`` imports by its own
name). Every model call the agent makes is one experience (the history's ``turn``
shape; ``workflow_args.shape: conversation`` merges a multi-turn conversation into
one), all carrying the run's reward. An agent that raises, or returns something
that is not a reward, fails its task with the reason.
"""

from __future__ import annotations

import importlib
import inspect
import math
from collections.abc import Callable
from typing import Any

from reinforge.core import Experience, Task
from reinforge.workflows.agentscope.chat_model import (
    auxiliary_chat_models,
    policy_chat_model,
    require_agentscope,
)
from reinforge.workflows.step_wise import require_history
from reinforge.workflows.workflow import WORKFLOWS, Workflow


def resolve_function(value: Any, key: str, task: Task) -> Callable[..., Any]:
    """``workflow_args[key]`` as a callable: the value itself, or what its dotted path
    names. Anything else is an error naming the task and the key."""
    if callable(value):
        return value
    if not isinstance(value, str) or not value.strip():
        raise ValueError(
            f"task {task.task_id!r}: workflow_args.{key} must be a function or its dotted "
            f"path (package.module.function), got {value!r}"
        )
    module_name, sep, attr = value.strip().partition(":")
    if not sep:
        module_name, _, attr = module_name.rpartition(".")
    try:
        found = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ValueError(
            f"task {task.task_id!r}: workflow_args.{key} = {value!r} names nothing "
            f"importable ({type(exc).__name__}: {exc})"
        ) from exc
    if not callable(found):
        raise ValueError(f"task {task.task_id!r}: workflow_args.{key} = {value!r} is not callable")
    return found


def _reward(value: Any, source: str, task: Task) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise TypeError(
            f"task {task.task_id!r}: {source} must give a number as the reward, got {value!r}"
        )
    return float(value)


def _numeric(metrics: Any, source: str, task: Task) -> dict[str, float]:
    if not metrics:
        return {}
    if not isinstance(metrics, dict):
        raise TypeError(f"task {task.task_id!r}: {source}.metrics must be a dict, got {metrics!r}")
    return {str(k): float(v) for k, v in metrics.items() if isinstance(v, int | float)}


class _AgentScopeAdapterBase(Workflow):
    """The shared part: a policy chat model, the agent's call, experiences from history."""

    is_async = True
    can_reset = True
    can_repeat = False  # one agent run per rollout

    def __init__(self, *, task: Task, model: Any, auxiliary_models: list[Any] | None = None):
        require_agentscope(type(self).__name__)
        require_history(model, type(self).__name__)
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        self.reset(task)

    def reset(self, task: Task) -> None:
        self.task = task
        self.workflow_args = dict(task.workflow_args or {})
        self.workflow_func = resolve_function(
            self.workflow_args.get("workflow_func"), "workflow_func", task
        )
        self.shape = self.workflow_args.get("shape", "turn")
        self.chat_model = policy_chat_model(self.model, task.rollout_args)

    async def _call_agent(self, *args: Any, **kwargs: Any) -> Any:
        """Await the user's function; what it raises fails the task, with the reason."""
        self.model.extract_experience_from_history()  # start from a clean history
        name = getattr(self.workflow_func, "__qualname__", repr(self.workflow_func))
        try:
            return await self.workflow_func(*args, **kwargs)
        except Exception as exc:
            raise RuntimeError(
                f"task {self.task.task_id!r}: the AgentScope workflow function {name} "
                f"raised {type(exc).__name__}: {exc}"
            ) from exc

    def construct_experiences(
        self, reward: float, metrics: dict[str, float] | None = None
    ) -> list[Experience]:
        """The history's experiences since the run began, each with ``reward``;
        ``metrics`` go on the last one."""
        experiences = self.model.extract_experience_from_history(shape=self.shape)
        if not experiences:
            raise RuntimeError(
                f"task {self.task.task_id!r}: the AgentScope agent made no call to the "
                "chat model it was given, so there is nothing to train on"
            )
        for step, exp in enumerate(experiences):
            exp.reward = reward
            exp.eid.step = step
        experiences[-1].metrics.update(metrics or {})
        return experiences


@WORKFLOWS.register_module("agentscope_workflow_adapter")
class AgentScopeWorkflowAdapter(_AgentScopeAdapterBase):
    """Runs ``workflow_func(raw_task, chat_model) -> float`` once per rollout."""

    async def run_async(self) -> list[Experience]:
        result = await self._call_agent(self.task.raw_task, self.chat_model)
        return self.construct_experiences(_reward(result, "workflow_func", self.task))


@WORKFLOWS.register_module("agentscope_workflow_adapter_v1")
class AgentScopeWorkflowAdapterV1(_AgentScopeAdapterBase):
    """Runs ``workflow_func(task, model, [auxiliary_models], [logger]) -> WorkflowOutput``,
    then ``judge_func`` on its response when one is configured."""

    def reset(self, task: Task) -> None:
        super().reset(task)
        judge = self.workflow_args.get("judge_func")
        self.judge_func = None if judge is None else resolve_function(judge, "judge_func", task)
        self._auxiliary_chat_models: dict[str, Any] | None = None

    @property
    def auxiliary_chat_models(self) -> dict[str, Any]:
        """AgentScope chat models over ``explorer.auxiliary_models``, by name."""
        if self._auxiliary_chat_models is None:
            self._auxiliary_chat_models = auxiliary_chat_models(self.auxiliary_models)
        return self._auxiliary_chat_models

    def _extras(self, func: Callable[..., Any]) -> dict[str, Any]:
        params = inspect.signature(func).parameters
        extras: dict[str, Any] = {}
        if "auxiliary_models" in params:
            extras["auxiliary_models"] = self.auxiliary_chat_models
        if "logger" in params:
            extras["logger"] = self.logger
        return extras

    async def run_async(self) -> list[Experience]:
        output = await self._call_agent(
            task=self.task.raw_task, model=self.chat_model, **self._extras(self.workflow_func)
        )
        if not hasattr(output, "reward") or not hasattr(output, "metrics"):
            raise TypeError(
                f"task {self.task.task_id!r}: workflow_func must return a WorkflowOutput "
                f"(reward, response, metrics), got {type(output).__name__}"
            )
        metrics = _numeric(output.metrics, "WorkflowOutput", self.task)
        if self.judge_func is None:
            if output.reward is None:
                raise ValueError(
                    f"task {self.task.task_id!r}: the WorkflowOutput has no reward and no "
                    "judge_func is configured to give one"
                )
            reward = _reward(output.reward, "WorkflowOutput.reward", self.task)
        else:
            if getattr(output, "response", None) is None:
                raise ValueError(
                    f"task {self.task.task_id!r}: judge_func needs the WorkflowOutput's "
                    "response, but it is None"
                )
            verdict = await self._judge(output.response)
            reward = _reward(getattr(verdict, "reward", None), "judge_func", self.task)
            metrics.update(_numeric(getattr(verdict, "metrics", None), "JudgeOutput", self.task))
        return self.construct_experiences(reward, metrics)

    async def _judge(self, response: Any) -> Any:
        assert self.judge_func is not None
        try:
            return await self.judge_func(
                task=self.task.raw_task, response=response, **self._extras(self.judge_func)
            )
        except Exception as exc:
            raise RuntimeError(
                f"task {self.task.task_id!r}: judge_func raised {type(exc).__name__}: {exc}"
            ) from exc
