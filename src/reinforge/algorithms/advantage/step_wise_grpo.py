"""Step-wise GRPO for multi-step agent runs (one Experience per step of a run).

Experiences are grouped by task (``eid.tid``); within a group, by run (``eid.rid``),
each run's steps ordered by ``eid.step``. Two estimators, chosen by ``reward_mode``:

* ``"run"`` (default; Trinity-RFT's step-wise GRPO): the run's return is the reward
  of its *last* step (largest ``eid.step``), where workflows put the outcome; rewards
  on earlier steps are ignored (they may be ``None`` or copies of the outcome). Run
  returns are GRPO-normalised across the runs of the task and every step of a run
  gets its run's advantage. A task with a single run gets 0.

* ``"step"``: every step's ``reward`` is a per-step reward ``r_t`` (``None`` → 0).
  Within a run, ``G_t = r_t + γ G_{t+1}``. The estimator normalises the ``G_t`` of
  **all steps of all runs of the task together** (pooled mean and Bessel std):
  ``A_t = (G_t − mean) / (std + eps)``. Pooling was chosen over normalising per
  step index because agent runs end at different steps: with per-index statistics
  the late steps of the longest run would have no peers (advantage 0) and small
  per-index groups make the std noisy. The cost is that the baseline is shared
  by all positions, so with positive rewards earlier steps (larger reward-to-go)
  lean positive. A task with a single step overall gets 0.

In both modes advantages and ``returns`` (the run return, or ``G_t``) are broadcast
over each step's action tokens.
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
from reinforge.core.metric_names import ADVANTAGE, GROUP_COUNT, RETURN, RUN_COUNT, RUN_STEPS_MEAN

REWARD_MODES = ("run", "step")


@ADVANTAGE_FNS.register_module("step_wise_grpo")
def step_wise_grpo_advantage(
    exps: Sequence[Experience],
    reward_mode: str = "run",
    gamma: float = 1.0,
    epsilon: float = 1e-6,
    std_normalize: bool = True,
) -> dict[str, float]:
    """Set step-wise GRPO advantages on ``exps`` in place; return metrics."""
    if reward_mode not in REWARD_MODES:
        raise ValueError(
            f"unknown reward_mode '{reward_mode}'; use one of {', '.join(REWARD_MODES)}"
        )
    advantages = torch.zeros(len(exps))
    returns = torch.zeros(len(exps))
    task_groups = group_indices(exps, "task")
    n_runs = 0
    for task_idx in task_groups:
        runs = run_indices(exps, task_idx)
        n_runs += len(runs)
        if reward_mode == "run":
            run_returns = torch.tensor([outcome_reward(exps[r[-1]]) for r in runs])
            normed, _ = group_normalise(run_returns, epsilon, std_normalize)
            for run, ret, adv in zip(runs, run_returns.tolist(), normed.tolist(), strict=True):
                returns[run] = ret
                advantages[run] = adv
        else:
            steps = [i for run in runs for i in run]
            g = [
                ret
                for run in runs
                for ret in run_step_returns(
                    [0.0 if exps[i].reward is None else float(exps[i].reward) for i in run], gamma
                )
            ]
            step_returns = torch.tensor(g)
            normed, _ = group_normalise(step_returns, epsilon, std_normalize)
            returns[steps] = step_returns
            advantages[steps] = normed
    for exp, adv, ret in zip(exps, advantages.tolist(), returns.tolist(), strict=True):
        set_outcome_advantage(exp, adv, ret)
    return {
        **summary(RETURN, returns),
        **summary(ADVANTAGE, advantages),
        GROUP_COUNT: float(len(task_groups)),
        RUN_COUNT: float(n_runs),
        RUN_STEPS_MEAN: len(exps) / max(n_runs, 1),
    }
