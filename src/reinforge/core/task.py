"""A Task is one row of a taskset plus everything needed to turn it into a Workflow."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from reinforge.core.generation import FormatConfig, GenerationConfig

# Set by ``reinforge.workflows`` / ``reinforge.rewards`` on import, so that a Task
# carrying a *name* can be resolved without ``core`` depending on higher layers;
# the package is imported on demand when nobody has imported it yet.
_resolvers: dict[str, Callable[[str], Any]] = {}
_resolver_packages = {"workflow": "reinforge.workflows", "reward_fn": "reinforge.rewards"}


def set_resolver(kind: str, resolver: Callable[[str], Any]) -> None:
    """Install the function that turns a workflow or reward_fn name into a class."""
    _resolvers[kind] = resolver


def _resolve(kind: str, value: Any) -> Any:
    if value is None or not isinstance(value, str):
        return value
    if kind not in _resolvers:
        importlib.import_module(_resolver_packages[kind])
    return _resolvers[kind](value)


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

    A name is resolved to its class when it is set, and remembered (in ``_names``) so
    that ``to_dict`` sends the name again. The value lives in the instance ``__dict__``
    under the field's own name, where ``copy`` and ``pickle`` find it. A descriptor
    rather than a ``__setattr__`` override, so that the other fields are set at plain
    attribute speed: every task is built field by field when the taskset is loaded
    and again for each attempt on a runner.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return None  # the dataclass default
        return obj.__dict__.get(self.name)

    def __set__(self, obj: Any, value: Any) -> None:
        state = obj.__dict__
        if isinstance(value, str):
            resolved = _try_resolve(self.name, value)
            if resolved is not None:
                # A new dict, not an update: a copy.copy() of this task must not share it.
                state["_names"] = {**state.get("_names", {}), self.name: (value, resolved)}
                value = resolved
        state[self.name] = value


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
    """

    workflow: Any = _ClassField()  # default None (see _ClassField)
    repeat_times: int | None = None
    format_args: FormatConfig = field(default_factory=FormatConfig)
    rollout_args: GenerationConfig = field(default_factory=GenerationConfig)
    workflow_args: dict[str, Any] = field(default_factory=dict)
    reward_fn_args: dict[str, Any] = field(default_factory=dict)
    is_eval: bool = False
    reward_fn: Any = _ClassField()  # default None
    raw_task: dict[str, Any] | None = None
    batch_id: int | str = ""
    task_id: int | str = ""
    index: dict[str, Any] = field(default_factory=dict)

    def _plain(self, kind: str) -> str | None:
        """The registered name ``kind`` was set by, while it still holds that class."""
        value = getattr(self, kind)
        name, resolved = self.__dict__.get("_names", {}).get(kind, (None, None))
        if name is not None and value is resolved:
            return name
        return _qualified_name(value)

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
            "workflow": self._plain("workflow"),
            "repeat_times": self.repeat_times,
            "format_args": self.format_args.to_dict(),
            "rollout_args": self.rollout_args.to_dict(),
            "workflow_args": dict(self.workflow_args),
            "reward_fn_args": dict(self.reward_fn_args),
            "is_eval": self.is_eval,
            "reward_fn": self._plain("reward_fn"),
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
