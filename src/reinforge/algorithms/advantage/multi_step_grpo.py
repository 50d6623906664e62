"""``multi_step_grpo``: Trinity-RFT's advantage for agent runs that earn one reward at the end.

A run of a multi-step workflow is stored as one experience per step (``eid.step``),
all in the task's group (``eid.tid``) and the run's ``eid.rid``. The run's outcome
is the reward of its *last* step (the largest ``eid.step``; a reward-propagation
workflow puts the same outcome on every step, a step-wise one may leave earlier
steps' rewards unset). For the runs ``i`` of one task,

    A_i = (R_i − mean(R)) / (std(R) + eps)        (Bessel std; ``std_normalize=False`` drops it)

and every step of run ``i`` gets ``A_i`` on every token it sampled. A task with a
single run gets 0 (no baseline; Trinity-RFT gives such a run its raw reward
instead). ``enable_step_norm`` divides a run's advantage by its number of steps, as
Trinity-RFT's option of that name does, so a long run does not weigh more in the
loss than a short one.

This is ``step_wise_grpo`` with ``reward_mode: run`` (see that module) under
Trinity-RFT's algorithm name, registered on its own so a config can name it.
"""

from __future__ import annotations

from collections.abc import Sequence

from reinforge.algorithms.advantage.common import group_indices, run_indices
from reinforge.algorithms.advantage.step_wise_grpo import step_wise_grpo_advantage
from reinforge.algorithms.registry import ADVANTAGE_FNS
from reinforge.core import Experience


@ADVANTAGE_FNS.register_module("multi_step_grpo")
def multi_step_grpo_advantage(
    exps: Sequence[Experience],
    epsilon: float = 1e-6,
    std_normalize: bool = True,
    enable_step_norm: bool = False,
) -> dict[str, float]:
    """Set multi-step GRPO advantages on ``exps`` in place; return metrics."""
    metrics = step_wise_grpo_advantage(
        exps, reward_mode="run", epsilon=epsilon, std_normalize=std_normalize
    )
    if enable_step_norm:
        for task_idx in group_indices(exps, "task"):
            for run in run_indices(exps, task_idx):
                for i in run:
                    exps[i].advantages = exps[i].advantages / len(run)
    return metrics
