"""Mirror of ``rllm.rewards``: the reward-function protocol, its input/output types and
rLLM's reward settings (``RewardConfig``, ``RewardType``)."""

from reinforge.rllm.rewards.reward_fn import RewardFunction, zero_reward
from reinforge.rllm.rewards.reward_types import (
    RewardConfig,
    RewardInput,
    RewardOutput,
    RewardType,
)

__all__ = [
    "RewardConfig",
    "RewardFunction",
    "RewardInput",
    "RewardOutput",
    "RewardType",
    "zero_reward",
]
