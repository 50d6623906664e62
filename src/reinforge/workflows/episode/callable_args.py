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

The same holds at any depth: inside a dict (or a list of dicts) of ``workflow_args``,
a string under a key with one of those endings names a callable too, e.g. rLLM's
``env_args: {reward_fn: my_pkg.rewards.f}``, which the workflow hands to its
environment's constructor. Nested keys are judged by their name alone (the receiving
constructor is not known here); other strings, at any depth, stay strings.
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


def _names_callable(key: Any) -> bool:
    return isinstance(key, str) and _CALLABLE_NAME.search(key) is not None


def named_object(where: str, value: str) -> Any:
    """What ``value`` names: a registered reward function or a dotted path;
    ``ValueError`` naming ``where`` (a config path) when it names nothing."""
    try:
        return REWARD_FUNCTIONS.get(value)
    except (RegistryError, ImportError, AttributeError) as exc:
        raise ValueError(
            f"{where}: '{value}' is neither a registered reward function nor an "
            f"importable dotted path ({exc})"
        ) from exc


def resolve_callable(key: str, value: str) -> Any:
    """The callable that ``value`` names; ``ValueError`` naming ``key`` when it names none."""
    target = named_object(f"workflow_args.{key}", value)
    if isinstance(target, type) and issubclass(target, RewardFn):
        return EpisodeRewardFunction(target())
    if not callable(target):
        raise ValueError(f"workflow_args.{key}: '{value}' names {target!r}, which is not callable")
    return target


def resolve_callable_args(cls: type, args: dict[str, Any]) -> dict[str, Any]:
    """``args`` with each string given for a callable argument of ``cls`` resolved, and
    the same in every dict and list nested in them (by key name there). ``args`` itself
    is not changed: what contains a resolved callable is a new dict or list."""
    return {
        key: resolve_callable(key, value)
        if isinstance(value, str) and _takes_callable(cls, key)
        else _resolve_nested(key, value)
        for key, value in args.items()
    }


def _resolve_nested(path: str, value: Any) -> Any:
    """``value`` (found at ``path`` in ``workflow_args``) with the strings under
    callable-named keys of its dicts resolved, at any depth."""
    if isinstance(value, dict):
        return {
            key: resolve_callable(f"{path}.{key}", item)
            if isinstance(item, str) and _names_callable(key)
            else _resolve_nested(f"{path}.{key}", item)
            for key, item in value.items()
        }
    if type(value) in (list, tuple):
        return type(value)(_resolve_nested(f"{path}[{i}]", item) for i, item in enumerate(value))
    return value
