"""reinforge: reinforcement fine-tuning of LLM agents.

The public API mirrors Trinity-RFT's (Task, Workflow, Experience, ModelWrapper,
reward functions) so that workflows written for it move over by changing imports.

Names are imported on first use (PEP 562), so that light subpackages - such as the
reward functions a timeout worker process imports - do not pull in torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'reinforge' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
