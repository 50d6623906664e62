"""REINFORCE++ token-level advantage (Hu 2025, "REINFORCE++: A Simple and Efficient
Approach for Aligning Large Language Models").

Choices made here:

* **Token rewards.** ``exp.token_level_reward`` if the experience has one; otherwise
  the scalar ``exp.reward`` placed on the *last action token* (the last token the
  policy sampled; trailing tool/template tokens of a multi-turn response get none).
* **KL in the reward.** If ``ref_logprobs`` (one response-length tensor per
  experience) is given with ``kl_coef > 0``, ``kl_coef · kl_penalty(logprobs,
  ref_logprobs, kind)`` is subtracted on every action token, using the
  experience's rollout ``logprobs``; this is the paper's per-token KL penalty.
* **Returns.** ``G_t = r_t + γ G_{t+1}`` over action tokens only (tool/user tokens are
  not time steps). ``exp.returns`` holds ``G``.
* **Normalisation.** ``G`` is whitened over all action tokens of the *batch*
  (mean/Bessel std), not per group: the paper's global advantage normalisation,
  which avoids the per-prompt bias of group baselines. ``exp.advantages`` holds it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from reinforge.algorithms.advantage.common import action_mask_f, pad_rows, summary
from reinforge.algorithms.kl import apply_kl_reward_penalty
from reinforge.algorithms.masked import masked_whiten
from reinforge.algorithms.registry import ADVANTAGE_FNS
from reinforge.algorithms.returns import discounted_returns
from reinforge.core import Experience
from reinforge.core.metric_names import ADVANTAGE, RETURN


def token_rewards(exp: Experience) -> torch.Tensor:
    """The response's per-token reward: ``token_level_reward`` or the outcome on the last action."""
    if exp.token_level_reward is not None:
        return exp.token_level_reward.to(torch.float32).clone()
    if exp.reward is None:
        raise ValueError(f"experience {exp.eid} has neither reward nor token_level_reward")
    rewards = torch.zeros(exp.response_length, dtype=torch.float32)
    actions = exp.action_mask.nonzero()
    if len(actions):
        rewards[int(actions[-1])] = float(exp.reward)
    return rewards


def _check_kl_inputs(exps: Sequence[Experience], ref_logprobs: Sequence[torch.Tensor]) -> None:
    if len(ref_logprobs) != len(exps):
        raise ValueError(f"got {len(ref_logprobs)} ref_logprobs rows for {len(exps)} experiences")
    for exp, ref in zip(exps, ref_logprobs, strict=True):
        if exp.logprobs is None:
            raise ValueError(f"KL reward penalty needs logprobs on experience {exp.eid}")
        if len(ref) != exp.response_length:
            raise ValueError(
                f"ref_logprobs for {exp.eid} has {len(ref)} entries, "
                f"the response has {exp.response_length}"
            )


@ADVANTAGE_FNS.register_module("reinforce_plus_plus")
def reinforce_plus_plus_advantage(
    exps: Sequence[Experience],
    gamma: float = 1.0,
    epsilon: float = 1e-8,
    ref_logprobs: Sequence[torch.Tensor] | None = None,
    kl_penalty: str = "k1",
    kl_coef: float = 0.0,
) -> dict[str, float]:
    """Set REINFORCE++ advantages/returns on ``exps`` in place; return metrics."""
    rewards = pad_rows([token_rewards(e) for e in exps])
    mask = pad_rows([action_mask_f(e) for e in exps]).bool()
    metrics: dict[str, float] = {}
    if ref_logprobs is not None and kl_coef > 0 and kl_penalty != "none":
        _check_kl_inputs(exps, ref_logprobs)
        rewards, metrics = apply_kl_reward_penalty(
            rewards,
            pad_rows([e.logprobs for e in exps], rewards.shape[1]),
            pad_rows(list(ref_logprobs), rewards.shape[1]),
            mask,
            kl_penalty,
            kl_coef,
        )
    returns = discounted_returns(rewards, mask, gamma)
    advantages = masked_whiten(returns, mask, epsilon)
    for i, exp in enumerate(exps):
        n = exp.response_length
        exp.returns = returns[i, :n].clone()
        exp.advantages = advantages[i, :n].clone()
    return {
        **metrics,
        **summary(RETURN, returns[mask]),
        **summary(ADVANTAGE, advantages[mask]),
    }
