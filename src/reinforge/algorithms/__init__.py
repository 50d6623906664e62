"""RL algorithms as pure torch functions: advantage estimators, policy losses, KL and
entropy terms, loss aggregation, presets composing them, and batch collation.

Layering: imports only ``reinforge.core`` (plus torch/numpy).
"""

from reinforge.algorithms.advantage import (
    gigpo_advantage,
    grpo_advantage,
    multi_step_grpo_advantage,
    on_policy_distill_advantage,
    on_policy_distill_batch_advantages,
    opmd_advantage,
    reinforce_advantage,
    reinforce_plus_plus_advantage,
    rloo_advantage,
    step_wise_grpo_advantage,
)
from reinforge.algorithms.aggregate import LOSS_AGG_MODES, aggregate_loss
from reinforge.algorithms.collate import collate
from reinforge.algorithms.entropy import entropy_bonus, entropy_from_logits
from reinforge.algorithms.gae import compute_gae
from reinforge.algorithms.kl import KL_KINDS, apply_kl_reward_penalty, kl_loss_term, kl_penalty
from reinforge.algorithms.masked import masked_mean, masked_sum, masked_var, masked_whiten
from reinforge.algorithms.policy_loss import (
    cispo_policy_loss,
    gspo_policy_loss,
    importance_sampling_policy_loss,
    opmd_policy_loss,
    ppo_policy_loss,
    sft_loss,
)
from reinforge.algorithms.presets import ALGORITHMS, resolve_algorithm
from reinforge.algorithms.registry import (
    ADVANTAGE_FNS,
    POLICY_LOSS_FNS,
    AdvantageFn,
    PolicyLossFn,
)
from reinforge.algorithms.returns import discounted_returns
from reinforge.algorithms.sampler_mismatch import (
    SamplerCorrection,
    log_ratio_stats,
    truncated_is_weights,
)
from reinforge.algorithms.spec import AlgorithmSpec
from reinforge.algorithms.train_batch import TrainBatch

__all__ = [
    "ADVANTAGE_FNS",
    "ALGORITHMS",
    "KL_KINDS",
    "LOSS_AGG_MODES",
    "POLICY_LOSS_FNS",
    "AdvantageFn",
    "AlgorithmSpec",
    "PolicyLossFn",
    "SamplerCorrection",
    "TrainBatch",
    "aggregate_loss",
    "apply_kl_reward_penalty",
    "cispo_policy_loss",
    "collate",
    "compute_gae",
    "discounted_returns",
    "entropy_bonus",
    "entropy_from_logits",
    "gigpo_advantage",
    "grpo_advantage",
    "gspo_policy_loss",
    "importance_sampling_policy_loss",
    "kl_loss_term",
    "kl_penalty",
    "log_ratio_stats",
    "masked_mean",
    "masked_sum",
    "masked_var",
    "masked_whiten",
    "multi_step_grpo_advantage",
    "on_policy_distill_advantage",
    "on_policy_distill_batch_advantages",
    "opmd_advantage",
    "opmd_policy_loss",
    "ppo_policy_loss",
    "reinforce_advantage",
    "reinforce_plus_plus_advantage",
    "resolve_algorithm",
    "rloo_advantage",
    "sft_loss",
    "step_wise_grpo_advantage",
    "truncated_is_weights",
]
