"""Policy losses; importing this package registers them in ``POLICY_LOSS_FNS``."""

from reinforge.algorithms.policy_loss.cispo import cispo_policy_loss
from reinforge.algorithms.policy_loss.gspo import gspo_policy_loss
from reinforge.algorithms.policy_loss.importance_sampling import importance_sampling_policy_loss
from reinforge.algorithms.policy_loss.opmd import opmd_policy_loss
from reinforge.algorithms.policy_loss.ppo import ppo_policy_loss
from reinforge.algorithms.policy_loss.sft import sft_loss

#: registered losses that take no importance ratio (their ``old_logprobs`` is ignored)
RATIO_FREE_LOSSES = frozenset({"sft", "opmd"})

__all__ = [
    "RATIO_FREE_LOSSES",
    "cispo_policy_loss",
    "gspo_policy_loss",
    "importance_sampling_policy_loss",
    "opmd_policy_loss",
    "ppo_policy_loss",
    "sft_loss",
]
