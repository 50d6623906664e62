"""reinforge: reinforcement fine-tuning of LLM agents.

The public API mirrors Trinity-RFT's (Task, Workflow, Experience, ModelWrapper,
reward functions) so that workflows written for it move over by changing imports.

Names are imported on first use (PEP 562), so that light subpackages - such as the
reward functions a timeout worker process imports - do not pull in torch.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from reinforge.core.lazy_exports import lazy_exports
from reinforge.core.task import set_resolver

__version__ = "0.1.0"

# transformers 5.25 swaps layers for kernels fetched from the Hugging Face Hub unless this
# says no: reinforge loads nothing from a hub at run time, and its trainer and engines must
# run the same layers (the sync check and the golden runs compare them). Set it yourself
# (USE_HUB_KERNELS=1) to opt in.
os.environ.setdefault("USE_HUB_KERNELS", "0")

_EXPORTS = {
    "EID": "reinforge.core",
    "Experience": "reinforge.core",
    "FormatConfig": "reinforge.core",
    "GenerationConfig": "reinforge.core",
    "Registry": "reinforge.core",
    "Task": "reinforge.core",
    "ModelWrapper": "reinforge.models",
    "REWARD_FUNCTIONS": "reinforge.rewards",
    "RewardFn": "reinforge.rewards",
    "WORKFLOWS": "reinforge.workflows",
    "Workflow": "reinforge.workflows",
}

__all__ = [
    "EID",
    "REWARD_FUNCTIONS",
    "WORKFLOWS",
    "Experience",
    "FormatConfig",
    "GenerationConfig",
    "ModelWrapper",
    "Registry",
    "RewardFn",
    "Task",
    "Workflow",
]

if TYPE_CHECKING:
    from reinforge.core import EID, Experience, FormatConfig, GenerationConfig, Registry, Task
    from reinforge.models import ModelWrapper
    from reinforge.rewards import REWARD_FUNCTIONS, RewardFn
    from reinforge.workflows import WORKFLOWS, Workflow


__getattr__, __dir__ = lazy_exports("reinforge", globals(), _EXPORTS)

#: Task field -> the package that fills its registry, and the registry's name there
_TASK_NAME_REGISTRIES = {
    "workflow": ("reinforge.workflows", "WORKFLOWS"),
    "reward_fn": ("reinforge.rewards", "REWARD_FUNCTIONS"),
}


def _resolve_on_first_use(kind: str, package: str, registry: str) -> Callable[[str], Any]:
    """A Task name resolver that imports ``package`` (registering its built-ins) on
    its first call, then hands ``kind`` over to the registry's own lookup."""

    def resolve(name: str) -> Any:
        lookup = getattr(importlib.import_module(package), registry).get
        set_resolver(kind, lookup)
        return lookup(name)

    return resolve


def _install_task_name_resolvers() -> None:
    """``reinforge.core`` imports nothing above it, so a Task given
    ``workflow="math_workflow"`` reaches the registries through the resolvers
    installed here: this package is imported before any of its modules,
    ``reinforge.core.task`` included."""
    for kind, (package, registry) in _TASK_NAME_REGISTRIES.items():
        set_resolver(kind, _resolve_on_first_use(kind, package, registry))


_install_task_name_resolvers()
