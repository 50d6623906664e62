"""Advantage estimators; importing this package registers them in ``ADVANTAGE_FNS``."""

from reinforge.algorithms.advantage.gigpo import gigpo_advantage
from reinforge.algorithms.advantage.grpo import grpo_advantage
from reinforge.algorithms.advantage.multi_step_grpo import multi_step_grpo_advantage
from reinforge.algorithms.advantage.on_policy_distill import (
    on_policy_distill_advantage,
    on_policy_distill_batch_advantages,
)
from reinforge.algorithms.advantage.opmd import opmd_advantage
from reinforge.algorithms.advantage.reinforce import reinforce_advantage
from reinforge.algorithms.advantage.reinforce_plus_plus import reinforce_plus_plus_advantage
from reinforge.algorithms.advantage.rloo import rloo_advantage
from reinforge.algorithms.advantage.step_wise_grpo import step_wise_grpo_advantage

__all__ = [
    "gigpo_advantage",
    "grpo_advantage",
    "multi_step_grpo_advantage",
    "on_policy_distill_advantage",
    "on_policy_distill_batch_advantages",
    "opmd_advantage",
    "reinforce_advantage",
    "reinforce_plus_plus_advantage",
    "rloo_advantage",
    "step_wise_grpo_advantage",
]
