"""Evaluators of AgentFlow episodes: naming them in YAML, calling them, applying verdicts.

An rLLM Evaluator scores a whole episode (``evaluate(task, episode) -> EvalOutput``).
``workflow_args.evaluator`` names one by dotted path (an Evaluator object or class,
an ``@evaluator`` function, a plain ``(task, episode)`` function) or a registered
reward function; without it the taskset's ``default_reward_fn_type`` is used
(``RewardFnEvaluator``). With neither, the episode keeps the rewards it carries
(``carried_rewards``), as rLLM's trainer reads them.
"""

from __future__ import annotations

import copy
import inspect
import math
from collections.abc import Callable
from typing import Any

from reinforge.core.agentflow import Episode, Task, Trajectory, flow_label
from reinforge.core.eval_output import EvalOutput, Signal, coerce_eval_output
from reinforge.rewards import RewardFn, call_reward_fn
from reinforge.workflows.agentflow.calls import reply_text
from reinforge.workflows.episode.callable_args import named_object

__all__ = [
    "RewardFnEvaluator",
    "apply_eval_output",
    "carried_rewards",
    "evaluator_label",
    "resolve_evaluator",
    "run_evaluator",
]


class RewardFnEvaluator:
    """A reinforge reward function used as an rLLM Evaluator.

    It scores the episode's answer (``artifacts["answer"]``, rLLM's convention; else
    the last reply of the last trajectory that has one) against the row's truth
    (``truth_key``, the taskset's ``format.response_key``). The reward is the sum of
    the components, correct when above 0; each component is a signal.
    """

    def __init__(self, reward_fn: Any, truth_key: str | None = None) -> None:
        self.reward_fn = reward_fn
        self.truth_key = truth_key

    def __repr__(self) -> str:
        return f"RewardFnEvaluator({type(self.reward_fn).__name__})"

    @staticmethod
    def answer(episode: Episode) -> str:
        """The text an answer-scoring reward function should see."""
        artifacts = getattr(episode, "artifacts", None) or {}
        if artifacts.get("answer") is not None:
            return str(artifacts["answer"])
        for traj in reversed(episode.trajectories):
            for step in reversed(traj.steps):
                text = reply_text(step)
                if text:
                    return text
        return ""

    def evaluate(self, task: Task, episode: Episode) -> EvalOutput:
        row = task.metadata or {}
        truth = row.get(self.truth_key) if self.truth_key else None
        components = call_reward_fn(
            self.reward_fn,
            self.answer(episode),
            truth=None if truth is None else str(truth),
            optional={"prompt": task.instruction, "raw_task": row},
        )
        total = float(sum(components.values()))
        signals = [Signal(name=str(k), value=float(v)) for k, v in components.items()]
        return EvalOutput(reward=total, is_correct=total > 0, signals=signals)


class _FunctionEvaluator:
    """A plain ``(task, episode)`` function used as an Evaluator."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def evaluate(self, task: Any, episode: Episode) -> Any:
        return self.fn(task, episode)


def resolve_evaluator(spec: Any, task: Any, where: str = "workflow_args.evaluator") -> Any:
    """The Evaluator ``spec`` names (see the module docstring); with ``spec`` None, the
    task's reward function; None when there is neither."""
    if spec is None:
        reward_cls = task.reward_fn_cls
        if reward_cls is None:
            return None
        return RewardFnEvaluator(reward_cls(**task.reward_fn_args), task.format_args.response_key)
    target = spec
    if isinstance(spec, str):
        target = named_object(where, spec)
    if isinstance(target, type) and issubclass(target, RewardFn):
        return RewardFnEvaluator(target(**task.reward_fn_args), task.format_args.response_key)
    if isinstance(target, RewardFn):
        return RewardFnEvaluator(target, task.format_args.response_key)
    if isinstance(target, type):
        try:
            target = target()
        except TypeError as exc:
            raise ValueError(
                f"{where}: the class {flow_label(target)} must build without arguments ({exc})"
            ) from exc
    if callable(getattr(target, "evaluate", None)):
        return target
    if callable(target):
        return _FunctionEvaluator(target)
    raise ValueError(
        f"{where}: {spec!r} is not an Evaluator (no evaluate(task, episode)) nor callable"
    )


def _first_parameter(fn: Callable[..., Any]) -> inspect.Parameter | None:
    try:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return None
    return params[0] if params else None


def _wants_row(evaluator: Any) -> bool:
    """Whether ``evaluator`` takes the task as the row dict rather than a ``Task``.

    As in rLLM's trainer: a first parameter annotated ``dict`` or named ``task_data`` /
    ``task_info`` gets the row. An ``@evaluator`` function gets the row unless its
    first parameter is annotated with ``Task`` alone (rLLM's trainer hands those
    functions the row, so cookbook evaluators read ``task["..."]``).
    """
    if isinstance(evaluator, _FunctionEvaluator):
        fn, decorated = evaluator.fn, False
    else:
        wrapped = getattr(evaluator, "__wrapped__", None)  # an @evaluator function's own
        fn, decorated = (wrapped, True) if wrapped is not None else (evaluator.evaluate, False)
    param = _first_parameter(fn)
    if param is None:
        return False
    if param.name in ("task_data", "task_info"):
        return True
    note = param.annotation
    if note is inspect.Parameter.empty:
        text = ""
    else:
        text = note if isinstance(note, str) else getattr(note, "__name__", str(note))
    if "dict" in text.lower():
        return True
    return decorated and "Task" not in text


def evaluator_label(evaluator: Any) -> str:
    if isinstance(evaluator, RewardFnEvaluator | _FunctionEvaluator):
        return (
            repr(evaluator)
            if isinstance(evaluator, RewardFnEvaluator)
            else flow_label(evaluator.fn)
        )
    return flow_label(evaluator)


def run_evaluator(evaluator: Any, task: Task, episode: Episode) -> EvalOutput:
    """``evaluator.evaluate`` on the task (row or ``Task``, see ``_wants_row``), coerced."""
    label = f"evaluator {evaluator_label(evaluator)}"
    argument = copy.deepcopy(task.metadata) if _wants_row(evaluator) else task
    return coerce_eval_output(evaluator.evaluate(argument, episode), label)


def apply_eval_output(episode: Episode, verdict: EvalOutput) -> None:
    """Write a verdict onto ``episode``: trajectory rewards left unset, signals,
    correctness, metrics."""
    signals = {s.name: float(s.value) for s in verdict.signals}
    for traj in episode.trajectories:
        if traj.reward is None:
            traj.reward = float(verdict.reward)
        if isinstance(traj, Trajectory) and not traj.signals:
            traj.signals = dict(signals)
    episode.is_correct = bool(verdict.is_correct)
    for key, value in verdict.metadata.items():
        if isinstance(value, bool | int | float) and math.isfinite(float(value)):
            episode.metrics[str(key)] = float(value)
    episode.metrics.update(signals)


def carried_rewards(episode: Episode) -> None:
    """Score an episode that has no evaluator by what it carries, as rLLM's trainer does.

    rLLM fills only the trajectory rewards its evaluator leaves unset, and its trainer
    then gives a trajectory still without one the reward of its last step (its
    ``broadcast`` transform; no steps: 0). Here there is no evaluator, so every
    trajectory reward the flow set stays, the others take their last step's, and the
    episode's ``is_correct`` stays as the flow set it.
    """
    for traj in episode.trajectories:
        if traj.reward is None:
            traj.reward = float(traj.steps[-1].reward) if traj.steps else 0.0
