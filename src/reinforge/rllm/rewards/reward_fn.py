"""Mirror of ``rllm.rewards.reward_fn``: the protocol, ``zero_reward`` and ``math_reward_fn``
(rLLM's search and code reward functions are not provided: see docs/migrating.md)."""

from reinforge.rllm.rewards.math_reward import math_reward_fn
from reinforge.workflows.episode.reward_output import RewardFunction, RewardInput, zero_reward

__all__ = ["RewardFunction", "RewardInput", "math_reward_fn", "zero_reward"]
