"""Mirror of ``rllm.eval.rollout_decorator``: ``@rollout`` and ``@evaluator``.

``@rollout`` makes a function ``(task, config) -> Episode | Trajectory | None`` an
AgentFlow (an ``AgentFlowFn``: ``run``, ``arun`` and calling it); ``@evaluator``
makes a function ``(task, episode) -> EvalOutput | float | bool | (float, bool)`` an
Evaluator (an ``EvaluatorFn``). Both work bare (``@rollout``) and with arguments
(``@rollout(name="math")``).

Under reinforge an ``AgentFlowFn`` is also a workflow: name it in a taskset by dotted
path (``default_workflow_type: my_flows.math_flow``), or give ``register="name"`` and
name it by that (rLLM writes such names to ``~/.rllm/agents.json`` for its CLI;
reinforge registers them in ``WORKFLOWS``). An ``EvaluatorFn``'s ``register=`` is
accepted and does nothing: a taskset names its evaluator by dotted path.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from functools import update_wrapper
from typing import Any, overload

from reinforge.rllm.eval.types import EvalOutput, coerce_eval_output
from reinforge.rllm.types import AgentConfig, Episode, coerce_to_episode, flow_label
from reinforge.workflows.agentflow.workflow import agentflow_workflow
from reinforge.workflows.workflow import WORKFLOWS

__all__ = [
    "AgentFlowFn",
    "EvaluatorFn",
    "coerce_eval_output",
    "coerce_to_episode",
    "evaluator",
    "rollout",
]

DEFAULT_FLOW_NAME = "solver"


class AgentFlowFn:
    """A function made into an AgentFlow by ``@rollout``.

    ``await flow.arun(task, config)`` runs it inside an event loop (a sync function
    goes to a worker thread); ``flow.run(task, config)`` and ``flow(task, config)``
    run it to completion from synchronous code (an async function under
    ``asyncio.run``, so not from inside a running loop). All three return an Episode;
    ``name`` names the trajectory built when the function returns a Trajectory
    without a name of its own, or None.
    """

    needs_env: bool = False  # runs beside the trainer, never in a sandbox

    def __init__(self, fn: Callable[..., Any], *, name: str = DEFAULT_FLOW_NAME) -> None:
        if not callable(fn):
            raise TypeError(f"@rollout decorates a function (task, config); got {fn!r}")
        self._fn = fn
        self._name = name
        self._is_async = inspect.iscoroutinefunction(fn)
        update_wrapper(self, fn)

    @property
    def name(self) -> str:
        """The trajectory name this flow's episodes get by default."""
        return self._name

    def _finish(self, result: Any, task: Any) -> Episode:
        return coerce_to_episode(result, task, self._name, flow=self)

    def run(self, task: Any, config: AgentConfig) -> Episode:
        if self._is_async:
            return self._finish(asyncio.run(self._fn(task, config)), task)
        return self._finish(self._fn(task, config), task)

    async def arun(self, task: Any, config: AgentConfig) -> Episode:
        if self._is_async:
            result = await self._fn(task, config)
        else:
            result = await asyncio.get_running_loop().run_in_executor(None, self._fn, task, config)
        return self._finish(result, task)

    def __call__(self, task: Any, config: AgentConfig) -> Episode:
        return self.run(task, config)

    def __reinforge_workflow__(self) -> type:
        """The reinforge Workflow running this flow (``WORKFLOWS`` calls this)."""
        return agentflow_workflow(self)

    def __repr__(self) -> str:
        return f"AgentFlowFn({getattr(self._fn, '__name__', self._fn)!r}, name={self._name!r})"


class EvaluatorFn:
    """A function made into an Evaluator by ``@evaluator``: ``evaluate(task, episode)``
    (or calling it) returns an ``EvalOutput`` whatever short form the function gave."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            raise TypeError(f"@evaluator decorates a function (task, episode); got {fn!r}")
        self._fn = fn
        update_wrapper(self, fn)

    def evaluate(self, task: Any, episode: Episode) -> EvalOutput:
        return coerce_eval_output(self._fn(task, episode), f"evaluator {flow_label(self)}")

    def __call__(self, task: Any, episode: Episode) -> EvalOutput:
        return self.evaluate(task, episode)

    def __repr__(self) -> str:
        return f"EvaluatorFn({getattr(self._fn, '__name__', self._fn)!r})"


@overload
def rollout(fn: Callable[..., Any]) -> AgentFlowFn: ...


@overload
def rollout(
    *, name: str = DEFAULT_FLOW_NAME, register: str | None = None
) -> Callable[[Callable[..., Any]], AgentFlowFn]: ...


def rollout(
    fn: Callable[..., Any] | None = None,
    *,
    name: str = DEFAULT_FLOW_NAME,
    register: str | None = None,
) -> AgentFlowFn | Callable[[Callable[..., Any]], AgentFlowFn]:
    """Make ``fn(task, config)`` an AgentFlow (see ``AgentFlowFn``).

    ``name`` (default ``"solver"``) names the trajectory built for the function's
    result when it returns None or an unnamed Trajectory. ``register`` also registers
    the flow as a reinforge workflow under that name.
    """

    def wrap(function: Callable[..., Any]) -> AgentFlowFn:
        flow = AgentFlowFn(function, name=name)
        if register is not None:
            WORKFLOWS.register_module(register)(flow)
        return flow

    return wrap(fn) if fn is not None else wrap


@overload
def evaluator(fn: Callable[..., Any]) -> EvaluatorFn: ...


@overload
def evaluator(*, register: str | None = None) -> Callable[[Callable[..., Any]], EvaluatorFn]: ...


def evaluator(
    fn: Callable[..., Any] | None = None, *, register: str | None = None
) -> EvaluatorFn | Callable[[Callable[..., Any]], EvaluatorFn]:
    """Make ``fn(task, episode)`` an Evaluator (see ``EvaluatorFn``). ``register`` is
    accepted for rLLM's sake and has no effect."""

    def wrap(function: Callable[..., Any]) -> EvaluatorFn:
        return EvaluatorFn(function)

    return wrap(fn) if fn is not None else wrap
