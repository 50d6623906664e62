"""Mirror of ``rllm.rewards``: the reward-function protocol and its input/output types."""

from reinforge.rllm.rewards.reward_fn import RewardFunction, zero_reward
from reinforge.rllm.rewards.reward_types import RewardInput, RewardOutput

__all__ = ["RewardFunction", "RewardInput", "RewardOutput", "zero_reward"]
