"""Workflow classes in plugins become nameable by their class names.

Upstream code registers its workflows elsewhere (Trinity-RFT in its package's
``__init__``, rLLM by passing classes in Python), so a file copied from it defines
classes without a ``register_module`` decorator. Each ``Workflow`` or episode
``Workflow`` subclass defined in a plugin module is registered under its class name
when that name is free; a name that is taken keeps its registration (the class stays
reachable by its dotted path).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable
from types import ModuleType

from reinforge.workflows import WORKFLOWS, Workflow
from reinforge.workflows.episode import EpisodeWorkflow

logger = logging.getLogger(__name__)


def _workflow_classes(module: ModuleType) -> list[type]:
    found = []
    for _, obj in inspect.getmembers(module, inspect.isclass):
        if obj.__module__ != module.__name__ or inspect.isabstract(obj):
            continue
        if issubclass(obj, Workflow | EpisodeWorkflow):
            found.append(obj)
    return found


def _registered(cls: type) -> bool:
    return any(
        registered is cls or getattr(registered, "episode_workflow_cls", None) is cls
        for registered in WORKFLOWS.modules.values()
    )


def register_plugin_workflows(modules: Iterable[ModuleType]) -> list[str]:
    """Register the modules' unregistered workflow classes by class name; the names used."""
    names = []
    for module in modules:
        for cls in _workflow_classes(module):
            if _registered(cls):
                continue
            if cls.__name__ in WORKFLOWS:
                logger.info(
                    "plugin workflow %s.%s: the name '%s' is taken; use its dotted path",
                    module.__name__, cls.__qualname__, cls.__name__,
                )  # fmt: skip
                continue
            WORKFLOWS.register_module(cls.__name__)(cls)
            names.append(cls.__name__)
    return names
