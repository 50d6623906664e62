"""Policy losses; importing this package registers them in ``POLICY_LOSS_FNS``."""

from reinforge.algorithms.policy_loss.cispo import cispo_policy_loss
from reinforge.algorithms.policy_loss.gspo import gspo_policy_loss
from reinforge.algorithms.policy_loss.opmd import opmd_policy_loss
from reinforge.algorithms.policy_loss.ppo import ppo_policy_loss
from reinforge.algorithms.policy_loss.sft import sft_loss

__all__ = [
    "cispo_policy_loss",
    "gspo_policy_loss",
    "opmd_policy_loss",
    "ppo_policy_loss",
    "sft_loss",
]
