"""Workflow, operator and reward classes in plugins become nameable by their class names.

Upstream code registers its classes elsewhere (Trinity-RFT in its package's
``__init__``, rLLM by passing classes in Python), so a file copied from it defines
classes without a ``register_module`` decorator. Each ``Workflow`` or episode
``Workflow``, ``ExperienceOperator`` and ``RewardFn`` subclass defined in a plugin
module is registered under its class name in its registry when that name is free; a
name that is taken keeps its registration (the class stays reachable by its dotted
path). A class its decorator registered under another name (Trinity's
``frozen_lake_workflow``) is nameable by its class name too, when that name is free.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable
from types import ModuleType

from reinforge.buffer.operators import (
    EXPERIENCE_OPERATORS,
    ExperienceOperator,
    ExperienceOperatorV1,
)
from reinforge.core.registry import Registry
from reinforge.rewards import REWARD_FUNCTIONS, RewardFn
from reinforge.workflows import WORKFLOWS, Workflow
from reinforge.workflows.episode import EpisodeWorkflow

logger = logging.getLogger(__name__)

#: which classes a plugin may leave undecorated, and the registry that names each kind
KINDS: tuple[tuple[tuple[type, ...], Registry], ...] = (
    ((Workflow, EpisodeWorkflow), WORKFLOWS),
    ((ExperienceOperator, ExperienceOperatorV1), EXPERIENCE_OPERATORS),
    ((RewardFn,), REWARD_FUNCTIONS),
)


def _defined_classes(module: ModuleType, bases: tuple[type, ...]) -> list[type]:
    found = []
    for _, obj in inspect.getmembers(module, inspect.isclass):
        if obj.__module__ != module.__name__ or inspect.isabstract(obj):
            continue
        if issubclass(obj, bases):
            found.append(obj)
    return found


def _registered(cls: type, registry: Registry) -> object | None:
    """What the registry holds for ``cls`` (the class, or an episode workflow's adapter)."""
    for registered in registry.modules.values():
        if registered is cls or getattr(registered, "episode_workflow_cls", None) is cls:
            return registered
    return None


def register_plugin_classes(modules: Iterable[ModuleType]) -> list[str]:
    """Register the modules' undecorated workflow, operator and reward classes by class
    name; the names used."""
    names = []
    for module in modules:
        for bases, registry in KINDS:
            for cls in _defined_classes(module, bases):
                held = _registered(cls, registry)
                if held is not None and cls.__name__ in registry:
                    continue  # decorated under its own name, or already done
                if held is not None:
                    registry.register_module(cls.__name__)(held)
                    names.append(cls.__name__)
                    continue
                if cls.__name__ in registry:
                    logger.info(
                        "plugin %s %s.%s: the name '%s' is taken; use its dotted path",
                        registry.kind, module.__name__, cls.__qualname__, cls.__name__,
                    )  # fmt: skip
                    continue
                registry.register_module(cls.__name__)(cls)
                names.append(cls.__name__)
    return names
