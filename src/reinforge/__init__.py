"""reinforge: reinforcement fine-tuning of LLM agents.

The public API mirrors Trinity-RFT's (Task, Workflow, Experience, ModelWrapper,
reward functions) so that workflows written for it move over by changing imports.
"""

from reinforge.core import EID, Experience, FormatConfig, GenerationConfig, Registry, Task
from reinforge.models import ModelWrapper
from reinforge.rewards import REWARD_FUNCTIONS, RewardFn
from reinforge.workflows import WORKFLOWS, Workflow

__version__ = "0.1.0"

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
