"""multi_step_grpo: the run's final reward, normalised in its task group, on every step."""

from __future__ import annotations

import math

import pytest

from reinforge.algorithms import ADVANTAGE_FNS, multi_step_grpo_advantage, resolve_algorithm
from reinforge.core import EID, Experience


def _step(task: int, run: int, step: int, reward: float | None) -> Experience:
    return Experience(
        tokens=[1, 2, 3, 4],
        prompt_length=2,
        action_mask=[1, 0],
        reward=reward,
        eid=EID(batch=0, task=task, run=run, step=step),
    )


def test_registered_and_the_preset_uses_it() -> None:
    assert ADVANTAGE_FNS.get("multi_step_grpo") is multi_step_grpo_advantage
    assert resolve_algorithm("multi_step_grpo").advantage_fn == "multi_step_grpo"


def test_final_reward_broadcast_to_every_step() -> None:
    # three runs of one task with final rewards 1, 0, 0.5 (2, 3 and 1 steps)
    r0 = [_step(0, 0, 1, 1.0), _step(0, 0, 0, 1.0)]
    r1 = [_step(0, 1, 0, 0.0), _step(0, 1, 1, 0.0), _step(0, 1, 2, 0.0)]
    r2 = [_step(0, 2, 0, 0.5)]
    metrics = multi_step_grpo_advantage(r0 + r1 + r2, epsilon=0.0)
    # mean 0.5, unbiased std 0.5 -> +1, -1, 0
    for exps, want in ((r0, 1.0), (r1, -1.0), (r2, 0.0)):
        for exp in exps:
            assert exp.advantages.tolist() == pytest.approx([want, 0.0])
    assert metrics["run/count"] == 3.0
    assert metrics["run/steps_mean"] == 2.0


def test_earlier_step_rewards_do_not_count() -> None:
    r0 = [_step(0, 0, 0, 5.0), _step(0, 0, 1, 1.0)]  # 5.0 is not the outcome
    r1 = [_step(0, 1, 0, None), _step(0, 1, 1, 0.0)]
    multi_step_grpo_advantage(r0 + r1)
    a = 0.5 / math.sqrt(0.5)
    assert [e.advantages[0].item() for e in r0 + r1] == pytest.approx([a, a, -a, -a], rel=1e-5)


def test_step_norm_divides_by_the_run_length() -> None:
    r0 = [_step(0, 0, 0, 1.0), _step(0, 0, 1, 1.0)]
    r1 = [_step(0, 1, 0, 0.0)]
    multi_step_grpo_advantage(r0 + r1, std_normalize=False, enable_step_norm=True)
    assert [e.advantages[0].item() for e in r0 + r1] == pytest.approx([0.25, 0.25, -0.5])


def test_a_lone_run_gets_zero() -> None:
    exps = [_step(0, 0, 0, 1.0), _step(0, 0, 1, 1.0)]
    multi_step_grpo_advantage(exps)
    assert all(e.advantages[0].item() == 0.0 for e in exps)
