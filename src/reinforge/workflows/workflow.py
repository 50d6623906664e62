"""The Workflow base class and the WORKFLOWS registry.

A workflow runs the policy on one Task and returns Experiences with rewards. The
explorer constructs it with ``task``, ``model`` (a ModelWrapper) and
``auxiliary_models`` (OpenAI clients of models that are not trained) and calls
``run()`` in a worker thread, or awaits ``run_async()`` when ``is_async`` is set.

Class flags the explorer reads:

* ``can_reset``: the instance may be reused for the next task via ``reset(task)``
  instead of being constructed again (for workflows with costly setup).
* ``can_repeat``: the workflow produces all ``repeat_times`` rollouts of its task in
  one call (after ``set_repeat_times``), typically by sampling ``n`` replies at
  once; otherwise the explorer runs it ``repeat_times`` times.
* ``is_async``: ``run_async`` is implemented instead of ``run``.

What a workflow has besides its task and model, as Trinity-RFT workflows expect:
``self.rollout_args``, the task's sampling settings (a ``GenerationConfig``: read as
attributes, ``rollout_args.n``, or as a mapping, ``**self.rollout_args``,
``.copy()``, ``["n"]``), and ``self.logger``, a logger named for the workflow's class.
Both are there even in a subclass whose ``reset`` does not call the base class.

Other workflow styles register in the same ``WORKFLOWS``: a class that is not a
``Workflow`` but has a ``__reinforge_workflow__()`` class method (rLLM-style
episode workflows, ``reinforge.workflows.episode``), or an object with such a method
(rLLM 0.3 flows made by ``reinforge.rllm.rollout``), is stored as the Workflow class
that method returns, both when registered and when looked up by dotted path; the
decorator still returns the class (or object) itself.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, MutableMapping
from typing import Any

from reinforge.core import Experience, GenerationConfig, Registry, Task


def as_workflow_class(obj: Any) -> Any:
    """``obj``, or the Workflow class its ``__reinforge_workflow__()`` hook returns."""
    # Workflows themselves first: every task resolves its workflow's name through
    # here, and a failed attribute lookup costs more than the subclass test.
    if isinstance(obj, type) and issubclass(obj, Workflow):
        return obj
    # a class's hook (episode workflows) or an object's (``reinforge.rllm.rollout`` flows)
    hook = getattr(obj, "__reinforge_workflow__", None)
    return obj if hook is None else hook()


#: Trinity-RFT's older property names -> the class flags the explorer reads
_LEGACY_FLAGS = {"asynchronous": "is_async", "repeatable": "can_repeat"}
_log = logging.getLogger(__name__)


def read_legacy_flags(cls: type) -> None:
    """Set ``is_async`` / ``can_repeat`` on ``cls`` from its ``asynchronous`` /
    ``repeatable`` property (or method), where the class defines one below
    ``Workflow``: older Trinity-RFT workflows declare them that way, and the explorer
    reads the class flags before it builds a workflow. The value is read from a bare
    instance (not initialised); one that needs the instance's state leaves the flag as
    it is, with a warning."""
    mro = cls.__mro__
    for legacy, flag in _LEGACY_FLAGS.items():
        owner = next((k for k in mro if legacy in k.__dict__), Workflow)
        flag_owner = next((k for k in mro if flag in k.__dict__), Workflow)
        if owner is Workflow or mro.index(owner) > mro.index(flag_owner):
            continue  # not overridden, or a class flag set further down wins
        attr = owner.__dict__[legacy]
        try:
            if isinstance(attr, property):
                value = attr.fget(object.__new__(cls))  # type: ignore[misc]
            elif callable(attr):
                value = attr(object.__new__(cls))
            else:
                value = attr
        except Exception as exc:
            _log.warning(
                "workflow %s.%s: its %r could not be read before the workflow is built "
                "(%s: %s); set the %s class flag instead",
                cls.__module__, cls.__qualname__, legacy, type(exc).__name__, exc, flag,
            )  # fmt: skip
            continue
        setattr(cls, flag, bool(value))


class WorkflowRegistry(Registry):
    """The workflow registry: adapts other workflow styles (see the module docstring)."""

    def register_module(
        self, name: str | None = None, *, force: bool = False
    ) -> Callable[[Any], Any]:
        register = super().register_module(name, force=force)

        def decorator(obj: Any) -> Any:
            register(as_workflow_class(obj))
            return obj

        return decorator

    def get(self, name: str) -> Any:
        return as_workflow_class(super().get(name))


WORKFLOWS = WorkflowRegistry("workflow", entry_point_group="reinforge.workflows")


# workflow class -> whether a class in its MRO (other than Workflow) defines ``resettable``
_DEFINES_RESETTABLE: dict[type, bool] = {}


def can_reuse(workflow: Any) -> bool:
    """Whether ``workflow`` may run the next task after ``reset(task)``: its class's
    ``can_reset`` flag, or the deprecated ``resettable`` property (or method) that
    workflows written for older Trinity-RFT define instead."""
    cls = type(workflow)
    overridden = _DEFINES_RESETTABLE.get(cls)
    if overridden is None:  # asked before every task: the MRO walk is done once per class
        overridden = _DEFINES_RESETTABLE[cls] = any(
            "resettable" in klass.__dict__ for klass in cls.__mro__ if klass is not Workflow
        )
    if not overridden:
        return bool(cls.can_reset)
    value = getattr(workflow, "resettable")  # noqa: B009  (a property or a method)
    return bool(value() if callable(value) else value)


class Workflow:
    """Base class of all workflows."""

    can_reset: bool = False
    can_repeat: bool = False
    is_async: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        read_legacy_flags(cls)

    def __init__(
        self, *, task: Task, model: Any, auxiliary_models: list[Any] | None = None
    ) -> None:
        self.task = task
        self.model = model
        # Trinity-RFT hands workflows OpenAI clients (older releases) or ModelWrappers
        # (newer ones, which keep them as auxiliary_model_wrappers and derive the
        # clients): either way ``auxiliary_models`` are clients
        self.auxiliary_models = [_client_of(m) for m in auxiliary_models or []]
        self.repeat_times = task.repeat_times
        self.run_id_base = 0

    # what the rollout_args and logger properties return when set (plain attributes,
    # not entries written through ``__dict__``, which would slow every attribute of
    # the instance down on CPython 3.11+)
    _rollout_args: GenerationConfig | MutableMapping[str, Any] | None = None
    _logger: logging.Logger | None = None
    _auxiliary_wrappers: list[Any] | None = None

    @property
    def rollout_args(self) -> GenerationConfig | MutableMapping[str, Any]:
        """The sampling settings of this run: what was assigned to ``self.rollout_args``
        (Trinity-RFT workflows assign ``asdict(task.rollout_args)``), else the task's
        ``rollout_args`` itself, which belongs to this run (the explorer hands every
        run its own copy of the task)."""
        assigned = self._rollout_args
        return self.task.rollout_args if assigned is None else assigned

    @rollout_args.setter
    def rollout_args(self, value: MutableMapping[str, Any]) -> None:
        self._rollout_args = value

    def keep_rollout_args(self, value: MutableMapping[str, Any]) -> None:
        """Make ``value`` what the base class's ``rollout_args`` returns. The setter says
        the same; this works too under a subclass that redefines ``rollout_args`` as a
        read-only property (as Trinity-RFT workflows do), where the setter is gone."""
        self._rollout_args = value

    @property
    def logger(self) -> logging.Logger:
        """The logger of this workflow's class (``module.ClassName``); a workflow may
        assign its own, as Trinity-RFT workflows do with ``get_logger(__name__)``."""
        if self._logger is None:
            cls = type(self)
            self._logger = logging.getLogger(f"{cls.__module__}.{cls.__qualname__}")
        return self._logger

    @logger.setter
    def logger(self, value: logging.Logger) -> None:
        self._logger = value

    @property
    def resettable(self) -> bool:
        warnings.warn(
            "Workflow.resettable is deprecated; use the can_reset class flag",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.can_reset

    @property
    def repeatable(self) -> bool:
        warnings.warn(
            "Workflow.repeatable is deprecated; use the can_repeat class flag",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.can_repeat

    @property
    def asynchronous(self) -> bool:
        warnings.warn(
            "Workflow.asynchronous is deprecated; use the is_async class flag",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.is_async

    @property
    def auxiliary_model_wrappers(self) -> list[Any]:
        """The auxiliary models as ``ModelWrapper``s (``chat``, ``logprobs(tokens,
        temperature=)``...), in the order of ``auxiliary_models``: Trinity-RFT's name,
        which its on-policy distillation workflows take the teacher from. A model served
        over HTTP gets its wrapper on first use (see ``AuxiliaryModel.wrapper``); a
        workflow may assign its own list."""
        if self._auxiliary_wrappers is not None:
            return self._auxiliary_wrappers
        asker = f"workflow {type(self).__name__}"
        return [_wrapper_of(m, asker) for m in self.auxiliary_models]

    @auxiliary_model_wrappers.setter
    def auxiliary_model_wrappers(self, value: list[Any] | None) -> None:
        self._auxiliary_wrappers = None if value is None else list(value)

    def auxiliary_model(self, name: str | int | None = None) -> Any:
        """The auxiliary model client named ``name`` (or at that index; the first when
        None). A name the config lacks raises an error naming this workflow and the
        models the config declares."""
        from reinforge.models.auxiliary import pick_client

        return pick_client(self.auxiliary_models, name, f"workflow {type(self).__name__}")

    def reset(self, task: Task) -> None:
        """Prepare this instance for another task (only called when ``can_reset``)."""
        raise NotImplementedError(
            f"{type(self).__name__} sets can_reset but does not implement reset()"
        )

    def set_repeat_times(self, repeat_times: int, run_id_base: int) -> None:
        """Ask for ``repeat_times`` rollouts in one call, numbered from ``run_id_base``."""
        self.repeat_times = repeat_times
        self.run_id_base = run_id_base

    def run(self) -> list[Experience]:
        """Run the task and return its experiences (sync workflows)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither run() nor run_async()")

    async def run_async(self) -> list[Experience]:
        """Run the task and return its experiences (async workflows)."""
        raise NotImplementedError(
            f"{type(self).__name__} sets is_async but does not implement run_async()"
        )


def _is_model_wrapper(model: Any) -> bool:
    # by what it offers: reinforge.models is not imported here, and a wrapper-like
    # object (a test's fake teacher) is as good
    return hasattr(model, "get_openai_client") and hasattr(model, "logprobs_async")


def _client_of(model: Any) -> Any:
    """An auxiliary model as the OpenAI client workflows get in ``auxiliary_models``."""
    return model.get_openai_client() if _is_model_wrapper(model) else model


def _wrapper_of(client: Any, asker: str) -> Any:
    """The ``ModelWrapper`` behind an auxiliary model's client."""
    if _is_model_wrapper(client):
        return client
    wrapper = getattr(client, "model_wrapper", None)  # ModelWrapper.get_openai_client()'s
    if wrapper is not None:
        return wrapper
    auxiliary = getattr(client, "auxiliary", None)
    if auxiliary is None or not hasattr(auxiliary, "wrapper"):
        raise TypeError(
            f"{asker}: auxiliary model {client!r} is neither a ModelWrapper nor the client "
            "of a configured auxiliary model (explorer.auxiliary_models), so it has no "
            "ModelWrapper for auxiliary_model_wrappers"
        )
    return auxiliary.wrapper
