"""reinforge: reinforcement fine-tuning of LLM agents.

The public API mirrors Trinity-RFT's (Task, Workflow, Experience, ModelWrapper,
reward functions) so that workflows written for it move over by changing imports.

Names are imported on first use (PEP 562), so that light subpackages - such as the
reward functions a timeout worker process imports - do not pull in torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reinforge.core.lazy_exports import lazy_exports

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


__getattr__, __dir__ = lazy_exports("reinforge", globals(), _EXPORTS)
