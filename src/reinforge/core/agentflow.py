"""rLLM 0.3's AgentFlow data types and protocols.

rLLM 0.3 keeps its core shapes in one module, ``rllm.types`` (mirrored, by
re-export, as ``reinforge.rllm.types``): ``Task`` (what a flow is asked to do),
``Step`` / ``Trajectory`` / ``Episode`` (what it did), ``AgentConfig`` (where its
model lives), the two protocols ``AgentFlow`` (runs a task, returns an Episode) and
``Evaluator`` (scores that Episode), and ``run_agent_flow``. They are plain records
and protocols over reinforge's episode records, so they live in ``core`` beside
those: the AgentFlow runtime (``reinforge.workflows.agentflow``) builds on them, and
the rLLM mirror re-exports them without importing any runtime.

``Step``, ``Trajectory`` and ``Episode`` here are reinforge's episode records
(``reinforge.core.episode``) with the fields rLLM 0.3 added on top: ``Step.id`` /
``input`` / ``output``, ``Trajectory.input`` / ``output`` / ``signals``,
``Episode.artifacts`` / ``session_id``, and ``metadata`` on all three, the same dict
as their ``info``. Being subclasses, they go everywhere reinforge's own records go
(``episode_to_experiences`` included).

How a flow runs under reinforge (its recording endpoint, the evaluator, the
experiences) is in ``reinforge.workflows.agentflow``.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import inspect
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from reinforge.core import episode as _core
from reinforge.core.episode import DEFAULT_TRAJECTORY_NAME, Action
from reinforge.core.plain import to_plain

__all__ = [
    "Action",
    "AgentConfig",
    "AgentFlow",
    "AgentFlowReturnError",
    "Episode",
    "Evaluator",
    "Step",
    "Task",
    "Trajectory",
    "coerce_to_episode",
    "flow_accepts_env",
    "flow_label",
    "run_agent_flow",
]


# ---- the task ----------------------------------------------------------------------------


@dataclass
class Task:
    """One problem handed to an AgentFlow.

    ``instruction`` is what the agent is shown (text, or OpenAI content blocks);
    ``metadata`` holds everything else about the problem, the taskset row under
    reinforge (its ground truth included). ``dataset_dir`` / ``sub_dir`` locate
    per-task files for sandboxed tasks, which reinforge does not run; they are kept so
    that flows reading them still construct.
    """

    id: str
    instruction: str | list[dict] = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    dataset_dir: Path = field(default_factory=Path)
    sub_dir: Path | None = None

    @property
    def task_dir(self) -> Path:
        """This task's own folder: ``dataset_dir / sub_dir``, or ``dataset_dir``."""
        return self.dataset_dir / self.sub_dir if self.sub_dir else self.dataset_dir


# ---- the episode records, with rLLM 0.3's extra fields ----------------------------------


def _metadata_alias(cls: type) -> type:
    """Give ``cls`` a ``metadata`` keyword and attribute that are its ``info`` dict."""
    generated_init = cls.__init__

    @functools.wraps(generated_init)
    def __init__(self: Any, *args: Any, metadata: dict | None = None, **kwargs: Any) -> None:
        generated_init(self, *args, **kwargs)
        if metadata:
            self.info.update(copy.deepcopy(dict(metadata)))

    def _get(self: Any) -> dict[str, Any]:
        return self.info

    def _set(self: Any, value: dict | None) -> None:
        self.info = dict(value or {})

    cls.__init__ = __init__  # type: ignore[method-assign]
    cls.metadata = property(_get, _set, doc="The same dict as ``info`` (rLLM 0.3's name).")  # type: ignore[attr-defined]
    return cls


@_metadata_alias
@dataclass(eq=False)
class Step(_core.Step):
    """A model call and its outcome; adds rLLM 0.3's ``id``, ``input`` and ``output``.

    A flow usually fills ``chat_completions`` and ``model_response`` (or ``output``)
    and leaves the token ids empty: reinforge gives the step the ids of the recorded
    call that produced it.
    """

    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    input: Any = None
    output: Any = None

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data.update(id=self.id, input=_plain(self.input), output=_plain(self.output))
        return data


@_metadata_alias
@dataclass(eq=False)
class Trajectory(_core.Trajectory):
    """One agent's (or role's) steps; adds rLLM 0.3's ``input``, ``output`` and ``signals``."""

    input: dict | None = None
    output: Any = None
    signals: dict[str, float] = field(default_factory=dict)

    @property
    def result(self) -> Any:
        """Older rLLM's name of ``output``."""
        return self.output

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data.update(
            input=_plain(self.input), output=_plain(self.output), signals=dict(self.signals)
        )
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        base = _core.Trajectory.from_dict({**data, "steps": []})
        return cls(
            uid=base.uid,
            name=base.name,
            task=base.task,
            steps=[Step.from_dict(s) for s in data.get("steps", [])],
            reward=base.reward,
            info=base.info,
            input=data.get("input"),
            output=data.get("output"),
            signals=dict(data.get("signals") or {}),
        )


@_metadata_alias
@dataclass(eq=False)
class Episode(_core.Episode):
    """One rollout of a task; adds rLLM 0.3's ``artifacts`` and ``session_id``.

    ``artifacts`` is the flow's free-form output for its evaluator; rLLM's convention
    is the final answer under ``artifacts["answer"]``.
    """

    artifacts: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data.update(artifacts=_plain(self.artifacts), session_id=self.session_id)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Episode:
        base = _core.Episode.from_dict({**data, "trajectories": []})
        return cls(
            id=base.id,
            task=base.task,
            termination_reason=base.termination_reason,
            is_correct=base.is_correct,
            trajectories=[Trajectory.from_dict(t) for t in data.get("trajectories", [])],
            metrics=base.metrics,
            info=base.info,
            artifacts=dict(data.get("artifacts") or {}),
            session_id=data.get("session_id"),
        )


def _plain(value: Any) -> Any:
    return to_plain(value)


# ---- configuration and protocols --------------------------------------------------------


@dataclass
class AgentConfig:
    """What every AgentFlow call is given besides the task: where its model is.

    ``base_url`` is an OpenAI-compatible endpoint (ending in ``/v1``) that answers
    with the policy being trained and records every call token-exact; build the
    client with it (``AsyncOpenAI(base_url=config.base_url, api_key="EMPTY")``) and
    send ``model=config.model``. ``session_uid`` names this rollout
    (``"task_id:run"``); ``metadata`` carries the taskset's extra ``workflow_args``;
    ``is_validation`` is True on eval tasksets; ``sampling_params`` is a copy, for
    information, of the sampling settings the endpoint applies to every call.
    """

    base_url: str
    model: str
    session_uid: str
    metadata: dict[str, Any] = field(default_factory=dict)
    is_validation: bool = False
    sampling_params: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class AgentFlow(Protocol):
    """An agent program: ``run(task, config)`` (or ``async arun(task, config)``).

    It returns an ``Episode`` (several trajectories, or ``artifacts`` for the
    evaluator), a ``Trajectory`` (wrapped into an Episode) or ``None`` (an Episode
    with one empty trajectory, which the recorded calls fill). ``@rllm.rollout``
    turns a plain function into one.
    """

    def run(self, task: Any, config: AgentConfig) -> Episode | Trajectory | None: ...


@runtime_checkable
class Evaluator(Protocol):
    """Scores what an AgentFlow did: ``evaluate(task, episode) -> EvalOutput``.

    Its ``reward`` goes to every trajectory whose ``reward`` the evaluator left unset
    (set ``trajectory.reward`` yourself to score roles apart), its ``is_correct`` to
    the episode. ``@rllm.evaluator`` turns a plain function into one.
    """

    def evaluate(self, task: Any, episode: Episode) -> Any: ...


# ---- running a flow ---------------------------------------------------------------------


class AgentFlowReturnError(TypeError):
    """An AgentFlow returned something that is not an Episode, a Trajectory or None."""


def flow_label(flow: Any) -> str:
    """How errors and logs name ``flow``: its dotted path when it has one."""
    target = getattr(flow, "__wrapped__", flow)
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    module = getattr(target, "__module__", None) or type(target).__module__
    return f"{module}.{name}" if module and module != "builtins" else name


def _check_trajectory(traj: Any, where: str, flow: Any) -> None:
    if not isinstance(traj, _core.Trajectory):
        raise AgentFlowReturnError(
            f"AgentFlow {flow_label(flow)}: {where} is a {type(traj).__name__}, "
            "not a Trajectory (from reinforge.rllm.types import Trajectory)"
        )
    if not isinstance(traj.steps, list):
        raise AgentFlowReturnError(
            f"AgentFlow {flow_label(flow)}: {where}.steps is a {type(traj.steps).__name__}, "
            "not a list of Steps"
        )
    for i, step in enumerate(traj.steps):
        if not isinstance(step, _core.Step):
            raise AgentFlowReturnError(
                f"AgentFlow {flow_label(flow)}: {where}.steps[{i}] is a {type(step).__name__}, "
                "not a Step (from reinforge.rllm.types import Step)"
            )


def _upgrade(episode: _core.Episode) -> Episode:
    """An ``Episode`` of this module for one of reinforge's plain ``Episode`` records."""
    if isinstance(episode, Episode):
        return episode
    return Episode(**{f.name: getattr(episode, f.name) for f in fields(_core.Episode)})


def coerce_to_episode(
    result: Any, task: Any, trajectory_name: str = DEFAULT_TRAJECTORY_NAME, *, flow: Any = None
) -> Episode:
    """The Episode that an AgentFlow's return value stands for.

    An ``Episode`` is kept (its ``task`` set to the task's metadata when missing), a
    ``Trajectory`` is wrapped into one (named ``trajectory_name`` if it kept the
    default name), ``None`` becomes one empty trajectory named ``trajectory_name``.
    Anything else, or an Episode holding something other than Trajectories of Steps,
    raises ``AgentFlowReturnError`` naming the flow and the offending field.
    """
    task_data = getattr(task, "metadata", task)
    if isinstance(result, _core.Episode):
        episode = _upgrade(result)
        if not isinstance(episode.trajectories, list):
            raise AgentFlowReturnError(
                f"AgentFlow {flow_label(flow)}: episode.trajectories is a "
                f"{type(episode.trajectories).__name__}, not a list of Trajectories"
            )
        for i, traj in enumerate(episode.trajectories):
            _check_trajectory(traj, f"episode.trajectories[{i}]", flow)
        if episode.task is None:
            episode.task = task_data
        return episode
    if isinstance(result, _core.Trajectory):
        _check_trajectory(result, "the returned trajectory", flow)
        if result.name == DEFAULT_TRAJECTORY_NAME:
            result.name = trajectory_name
        return Episode(task=task_data, trajectories=[result])
    if result is None:
        return Episode(task=task_data, trajectories=[Trajectory(name=trajectory_name)])
    raise AgentFlowReturnError(
        f"AgentFlow {flow_label(flow)} returned a {type(result).__name__}; an AgentFlow "
        "returns an Episode, a Trajectory or None (from reinforge.rllm.types import Episode)"
    )


def flow_accepts_env(flow: Any) -> bool:
    """Whether the flow's entry point takes a keyword-only ``env`` (a sandbox).

    reinforge provisions no sandboxes; this only answers the question as rLLM does.
    """
    entry = _entry_point(flow)
    try:
        params = inspect.signature(entry).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        (p.name == "env" and p.kind is p.KEYWORD_ONLY) or p.kind is p.VAR_KEYWORD for p in params
    )


def _entry_point(flow: Any) -> Callable[..., Any]:
    """``arun`` when it is a coroutine function, else ``run``, else the flow itself."""
    arun = getattr(flow, "arun", None)
    if arun is not None and inspect.iscoroutinefunction(arun):
        return arun
    run = getattr(flow, "run", None)
    if callable(run):
        return run
    if callable(flow):
        return flow
    raise TypeError(
        f"{flow_label(flow)} is not an AgentFlow: it has no run(task, config) or "
        "async arun(task, config) and is not callable"
    )


def trajectory_name_of(flow: Any) -> str:
    """The name given to a trajectory the framework builds for ``flow``."""
    name = getattr(flow, "name", None)
    return name if isinstance(name, str) and name else DEFAULT_TRAJECTORY_NAME


async def call_agent_flow(flow: Any, task: Any, config: AgentConfig, executor: Any = None) -> Any:
    """What ``flow`` returns for ``task``: awaited when async, else run in ``executor``
    (a thread) so that a flow making blocking HTTP calls leaves the event loop free."""
    entry = _entry_point(flow)
    if inspect.iscoroutinefunction(entry):
        return await entry(task, config)
    loop = asyncio.get_running_loop()
    result = await loop.run_in_executor(executor, functools.partial(entry, task, config))
    if inspect.isawaitable(result):  # a callable object whose __call__ is async
        result = await result
    return result


async def run_agent_flow(
    agent: Any, task: Any, config: AgentConfig, executor: Any = None, env: Any = None
) -> Episode:
    """Run ``agent`` on ``task`` once and return its Episode (``coerce_to_episode``).

    ``arun`` is awaited when the flow has it; otherwise ``run`` (or the flow itself,
    when it is a plain function) runs in ``executor``. ``env`` must stay None:
    reinforge has no sandboxes to hand a flow.
    """
    if env is not None:
        raise ValueError(
            f"AgentFlow {flow_label(agent)}: reinforge runs no sandboxes, so env= cannot be given"
        )
    result = await call_agent_flow(agent, task, config, executor)
    return coerce_to_episode(result, task, trajectory_name_of(agent), flow=agent)
