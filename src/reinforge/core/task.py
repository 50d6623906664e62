"""A Task is one row of a taskset plus everything needed to turn it into a Workflow."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from reinforge.core.generation import FormatConfig, GenerationConfig

# How a Task turns a workflow or reward_fn *name* into its class. ``core`` imports
# nothing above it, so the registries are reached through these functions, which
# the ``reinforge`` package installs on import (``reinforge/__init__.py``).
_resolvers: dict[str, Callable[[str], Any]] = {}


def set_resolver(kind: str, resolver: Callable[[str], Any]) -> None:
    """Install the function that turns a workflow or reward_fn name into a class."""
    _resolvers[kind] = resolver


def _resolve(kind: str, value: Any) -> Any:
    if value is None or not isinstance(value, str):
        return value
    resolver = _resolvers.get(kind)
    if resolver is None:
        raise LookupError(
            f"cannot resolve {kind} {value!r}: no {kind} resolver is installed "
            "(the reinforge package installs them on import)"
        )
    return resolver(value)


def _try_resolve(kind: str, name: str) -> Any:
    """The class ``name`` stands for, or None when it does not resolve (yet)."""
    try:
        return _resolve(kind, name)
    except Exception:  # an unknown name: kept as given; workflow_cls raises the reason
        return None


def _qualified_name(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return f"{value.__module__}.{value.__qualname__}"


class _ClassField:
    """A Task field holding a workflow or reward_fn class, which may also be set by name.

    A name is resolved to its class when it is set, and remembered with that class so
    that ``to_dict`` sends the name again while the field still holds it. Everything
    lives in the instance ``__dict__`` (the value under the field's own name), where
    ``copy`` and ``pickle`` find it; as plain entries, not a container per task, since
    a taskset's tasks live for the whole run and every full garbage collection walks
    them. A descriptor rather than a ``__setattr__`` override, so that the other fields
    are set at plain attribute speed: every task is built field by field when the
    taskset is loaded and again for each attempt on a runner.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.set_by = f"_{name}_set_by"  # the registered name last set
        self.resolved = f"_{name}_resolved"  # the class that name resolved to

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return None  # the dataclass default
        return obj.__dict__.get(self.name)

    def __set__(self, obj: Any, value: Any) -> None:
        state = obj.__dict__
        if isinstance(value, str):
            resolved = _try_resolve(self.name, value)
            if resolved is not None:
                state[self.set_by] = value
                state[self.resolved] = value = resolved
        state[self.name] = value

    def plain(self, obj: Any) -> str | None:
        """The registered name the field was set by, while it still holds that class;
        else the dotted path of what it holds."""
        state = obj.__dict__
        value = state.get(self.name)
        name = state.get(self.set_by)
        if name is not None and value is state.get(self.resolved):
            return name
        return _qualified_name(value)


_WORKFLOW = _ClassField()
_REWARD_FN = _ClassField()


@dataclass
class Task:
    """One unit of work for a workflow.

    ``workflow`` and ``reward_fn`` may be given as classes or registered names (or
    dotted paths); a name is resolved to its class when it is set, as Trinity-RFT
    workflows expect (``self.task.reward_fn(**self.task.reward_fn_args)``), and
    ``to_dict`` sends the name again. A name that does not resolve (yet) stays a
    string, and ``workflow_cls`` / ``reward_fn_cls`` raise the registry's error.

    ``raw_task`` is the taskset row as read; ``format_args`` says which of its keys
    hold the prompt and the reference answer; ``rollout_args`` are the sampling
    settings; ``workflow_args`` / ``reward_fn_args`` are free-form per-taskset options.

    ``repeat_times`` is the number of rollouts of the task (one GRPO group) that the
    explorer asks for. Left unset (None or 0) it is ``rollout_args.n``. An
    ``rollout_args.n`` left unset follows ``repeat_times`` (a copy of the config is
    made), so a workflow that samples ``n=self.rollout_args.n`` in one call gets all
    of them; an ``n`` given explicitly is kept, as in Trinity-RFT, where
    ``Task(repeat_times=1, rollout_args=GenerationConfig(n=2)).to_workflow(model).run()``
    samples 2. The explorer runs every task as ``repeat_times`` says either way: each
    run gets ``for_run(k)``, a copy whose ``rollout_args.n`` is ``repeat_times`` for a
    ``can_repeat`` workflow (which also gets ``set_repeat_times``), else 1 for each
    of the ``repeat_times`` runs.
    """

    workflow: Any = _WORKFLOW  # default None (see _ClassField)
    repeat_times: int | None = None
    format_args: FormatConfig = field(default_factory=FormatConfig)
    rollout_args: GenerationConfig = field(default_factory=GenerationConfig)
    workflow_args: dict[str, Any] = field(default_factory=dict)
    reward_fn_args: dict[str, Any] = field(default_factory=dict)
    is_eval: bool = False
    reward_fn: Any = _REWARD_FN  # default None
    raw_task: dict[str, Any] | None = None
    batch_id: int | str = ""
    task_id: int | str = ""
    index: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        rollout = self.rollout_args
        if not self.repeat_times:
            self.repeat_times = int(rollout.n)
        elif rollout.n != self.repeat_times and not _n_is_set(rollout):
            # a copy: the caller's config may be shared by other tasks
            self.rollout_args = replace(rollout, n=self.repeat_times)

    def for_run(self, samples: int) -> Task:
        """The task as one run of its workflow gets it: a copy whose ``rollout_args.n``
        is ``samples`` (``repeat_times`` for a workflow that makes all rollouts in one
        run, else 1).

        A workflow may change its copy's configs and dicts (``rollout_args``,
        ``workflow_args``, ...) without touching this task, which the next attempt,
        the task's other runs and later epochs start from. ``raw_task``, the row as
        read, is shared.
        """
        run = _shallow_copy(self)
        run.format_args = _shallow_copy(self.format_args)
        run.rollout_args = self.rollout_args.copy()
        run.rollout_args.n = samples
        run.workflow_args = dict(self.workflow_args)
        run.reward_fn_args = dict(self.reward_fn_args)
        run.index = dict(self.index)
        return run

    @property
    def workflow_cls(self) -> type:
        cls = _resolve("workflow", self.workflow)
        if cls is None:
            raise ValueError(f"task {self.task_id!r} has no workflow; set default_workflow_type")
        return cls

    @property
    def reward_fn_cls(self) -> type | None:
        return _resolve("reward_fn", self.reward_fn)

    def to_workflow(self, model: Any, auxiliary_models: list[Any] | None = None) -> Any:
        """Instantiate this task's workflow around ``model``."""
        return self.workflow_cls(task=self, model=model, auxiliary_models=auxiliary_models)

    @property
    def task_desc(self) -> str | None:
        if not self.raw_task:
            return None
        return self.raw_task.get(self.format_args.prompt_key)

    @property
    def truth(self) -> str | None:
        if not self.raw_task or not self.format_args.response_key:
            return None
        value = self.raw_task.get(self.format_args.response_key)
        return None if value is None else str(value)

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (classes become dotted paths) for crossing process boundaries."""
        return {
            "workflow": _WORKFLOW.plain(self),
            "repeat_times": self.repeat_times,
            "format_args": self.format_args.to_dict(),
            "rollout_args": self.rollout_args.to_dict(),
            "workflow_args": dict(self.workflow_args),
            "reward_fn_args": dict(self.reward_fn_args),
            "is_eval": self.is_eval,
            "reward_fn": _REWARD_FN.plain(self),
            "raw_task": self.raw_task,
            "batch_id": self.batch_id,
            "task_id": self.task_id,
            "index": dict(self.index),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Task:
        data = dict(data)
        data["format_args"] = FormatConfig(**(data.get("format_args") or {}))
        data["rollout_args"] = GenerationConfig.from_dict(data.get("rollout_args"))
        return cls(**data)


def _n_is_set(rollout: Any) -> bool:
    """Whether ``rollout.n`` was given explicitly (a plain dict's ``n`` always was)."""
    is_set = getattr(rollout, "n_is_set", None)
    return True if is_set is None else is_set()


def _shallow_copy(obj: Any) -> Any:
    """A shallow copy, as ``copy.copy`` makes it; for reinforge's own classes without
    the generic ``__reduce_ex__`` round trip (a copy per attempt must stay cheap)."""
    if type(obj) not in (Task, FormatConfig):
        return copy.copy(obj)
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__)
    return new
