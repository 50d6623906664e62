"""Callables named in YAML: ``workflow_args`` strings turned into the objects they name.

rLLM passes functions to a workflow's constructor in Python (``reward_function=f``);
a taskset's ``workflow_args`` can only hold text, so a string given for an argument
that takes a callable names it: a registered reward function (``math_reward``, built
with no arguments) or a dotted path (``my_pkg.rewards.f``; a ``RewardFn`` class found
there is built, a function is used as it is). A ``RewardFn`` is handed over called the
rLLM way, ``f(task_info, action) -> RewardOutput`` (``EpisodeRewardFunction``). An
argument takes a callable when its name ends in ``_fn``, ``_func``, ``_function``,
``_callable``, ``_cls`` or ``_class`` (rLLM's ``agent_cls: my_pkg.agents.MyAgent``), or
when its annotation says ``Callable``.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from reinforge.core.registry import RegistryError
from reinforge.rewards import REWARD_FUNCTIONS, RewardFn
from reinforge.workflows.episode.reward_output import EpisodeRewardFunction

_CALLABLE_NAME = re.compile(r"(^|_)(fn|func|function|callable|cls|class)$")


def _takes_callable(cls: type, name: str) -> bool:
    if _CALLABLE_NAME.search(name):
        return True
    try:
        parameter = inspect.signature(cls).parameters.get(name)
    except (TypeError, ValueError):
        return False
    return parameter is not None and "Callable" in str(parameter.annotation)


def resolve_callable(key: str, value: str) -> Any:
    """The callable that ``value`` names; ``ValueError`` naming ``key`` when it names none."""
    try:
        target = REWARD_FUNCTIONS.get(value)
    except (RegistryError, ImportError, AttributeError) as exc:
        raise ValueError(
            f"workflow_args.{key}: '{value}' is neither a registered reward function nor an "
            f"importable dotted path ({exc})"
        ) from exc
    if isinstance(target, type) and issubclass(target, RewardFn):
        return EpisodeRewardFunction(target())
    if not callable(target):
        raise ValueError(f"workflow_args.{key}: '{value}' names {target!r}, which is not callable")
    return target


def resolve_callable_args(cls: type, args: dict[str, Any]) -> dict[str, Any]:
    """``args`` with each string given for a callable argument of ``cls`` resolved."""
    return {
        key: resolve_callable(key, value)
        if isinstance(value, str) and _takes_callable(cls, key)
        else value
        for key, value in args.items()
    }
