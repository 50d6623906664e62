"""GiGPO (Feng et al. 2025, "Group-in-Group Policy Optimization for LLM Agent Training").

Two group-relative advantages, added, for agent runs stored one experience per step:

* **Episode level** (the outer group): the runs of one task (``eid.tid``) are
  compared by their return ``R_i``, GRPO-style:
  ``A^E_i = (R_i − mean(R)) / (std(R) + eps)``; every step of run ``i`` gets it.
* **Step level** (the inner groups): steps taken *from the same environment state*
  are compared by what followed them. A step's state is the hash of the
  observation it acted on, ``info["state_hash"]`` (``reinforge.core.state_hash``),
  which step-wise workflows set. Within one task, all steps with the same hash, from
  any run (the same run twice included), form an anchor group, and
  ``A^S_t = (G_t − mean(G)) / (std(G) + eps)`` over that group, where ``G_t`` is the
  step's discounted return.

A step's advantage is ``A^E + step_advantage_weight · A^S``, broadcast over the
tokens it sampled; ``returns`` hold ``G_t``.

``reward_mode`` says where the rewards are, as for ``step_wise_grpo``:

* ``"run"`` (default): the outcome is the last step's reward (largest ``eid.step``),
  earlier steps' rewards are ignored (a reward-propagation workflow copies the
  outcome onto them). ``R_i`` is that outcome and ``G_t = γ^(T−1−t) · R`` for a run
  of ``T`` steps, so of two steps from the same state, the one that reached the
  outcome sooner gets more credit.
* ``"step"``: each step's ``reward`` is its own (``None`` → 0);
  ``G_t = r_t + γ G_{t+1}`` and ``R_i = Σ_t r_t``.

Groups of one (a task with a single run; a state no other step of the task acted
in; a step without a ``state_hash``) get 0 at that level: there is no peer to
compare with. verl-agent, the authors' code, gives a lone step its raw return
instead; here it carries no step-level signal. ``std_normalize=False`` divides by
nothing at both levels (the paper's ``mean_norm`` mode). Defaults follow the
paper: ``gamma`` 0.95, weight 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from reinforge.algorithms.advantage.common import (
    group_indices,
    group_normalise,
    outcome_reward,
    run_indices,
    run_step_returns,
    set_outcome_advantage,
    summary,
)
from reinforge.algorithms.registry import ADVANTAGE_FNS
from reinforge.core import Experience
from reinforge.core.metric_names import (
    ADVANTAGE,
    ANCHOR_GROUP_COUNT,
    ANCHOR_GROUP_SIZE_MEAN,
    ANCHOR_MISSING_FRACTION,
    ANCHOR_SINGLETON_FRACTION,
    EPISODE_ADVANTAGE,
    GROUP_COUNT,
    RETURN,
    RUN_COUNT,
    RUN_STEPS_MEAN,
    STEP_ADVANTAGE,
)
from reinforge.core.state_hash import STATE_HASH

REWARD_MODES = ("run", "step")


def _step_rewards(exps: Sequence[Experience], run: list[int], reward_mode: str) -> list[float]:
    """The per-step rewards of one run (ordered by step) under ``reward_mode``."""
    if reward_mode == "run":
        rewards = [0.0] * len(run)
        rewards[-1] = outcome_reward(exps[run[-1]])
        return rewards
    return [0.0 if exps[i].reward is None else float(exps[i].reward) for i in run]


def anchor_groups(
    exps: Sequence[Experience], task_idx: Sequence[int]
) -> tuple[list[list[int]], int]:
    """The steps of one task grouped by ``info["state_hash"]``, groups in first-seen
    order; a step without a hash is a group of its own. Also returns how many lacked one."""
    groups: dict[object, list[int]] = {}
    missing = 0
    for i in task_idx:
        key = (exps[i].info or {}).get(STATE_HASH)
        if key is None:
            missing += 1
            key = ("missing", i)
        groups.setdefault(key, []).append(i)
    return list(groups.values()), missing


@ADVANTAGE_FNS.register_module("gigpo")
def gigpo_advantage(
    exps: Sequence[Experience],
    gamma: float = 0.95,
    step_advantage_weight: float = 1.0,
    reward_mode: str = "run",
    epsilon: float = 1e-6,
    std_normalize: bool = True,
) -> dict[str, float]:
    """Set GiGPO advantages on ``exps`` in place; return metrics (see the module docstring)."""
    if reward_mode not in REWARD_MODES:
        raise ValueError(
            f"unknown reward_mode '{reward_mode}'; use one of {', '.join(REWARD_MODES)}"
        )
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    n = len(exps)
    episode_adv = torch.zeros(n)
    step_adv = torch.zeros(n)
    returns = torch.zeros(n)
    task_groups = group_indices(exps, "task")
    n_runs = n_anchor = n_single = n_missing = 0
    for task_idx in task_groups:
        runs = run_indices(exps, task_idx)
        n_runs += len(runs)
        run_returns = []
        for run in runs:
            rewards = _step_rewards(exps, run, reward_mode)
            returns[run] = torch.tensor(run_step_returns(rewards, gamma))
            run_returns.append(sum(rewards))
        normed, _ = group_normalise(torch.tensor(run_returns), epsilon, std_normalize)
        for run, adv in zip(runs, normed.tolist(), strict=True):
            episode_adv[run] = adv
        groups, missing = anchor_groups(exps, task_idx)
        n_missing += missing
        n_anchor += len(groups)
        for group in groups:
            n_single += len(group) == 1
            step_adv[group], _ = group_normalise(returns[group], epsilon, std_normalize)
    advantages = episode_adv + step_advantage_weight * step_adv
    for exp, adv, ret in zip(exps, advantages.tolist(), returns.tolist(), strict=True):
        set_outcome_advantage(exp, adv, ret)
    return {
        **summary(RETURN, returns),
        **summary(ADVANTAGE, advantages),
        **summary(EPISODE_ADVANTAGE, episode_adv),
        **summary(STEP_ADVANTAGE, step_adv),
        GROUP_COUNT: float(len(task_groups)),
        RUN_COUNT: float(n_runs),
        RUN_STEPS_MEAN: n / max(n_runs, 1),
        ANCHOR_GROUP_COUNT: float(n_anchor),
        ANCHOR_GROUP_SIZE_MEAN: n / max(n_anchor, 1),
        ANCHOR_SINGLETON_FRACTION: n_single / max(n, 1),
        ANCHOR_MISSING_FRACTION: n_missing / max(n, 1),
    }
