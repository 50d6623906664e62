"""Mirror of ``rllm.rewards.reward_types``."""

from reinforge.rewards.rllm_math import RewardConfig, RewardType
from reinforge.workflows.episode.reward_output import RewardInput, RewardOutput

__all__ = ["RewardConfig", "RewardInput", "RewardOutput", "RewardType"]
