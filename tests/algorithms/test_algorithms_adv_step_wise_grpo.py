"""Step-wise GRPO: run-level outcome mode and per-step reward mode."""

import math

import pytest

from reinforge.algorithms import step_wise_grpo_advantage
from reinforge.core import EID, Experience


def _step(task: int, run: int, step: int, reward: float | None) -> Experience:
    return Experience(
        tokens=[1, 2, 3, 4],
        prompt_length=2,
        action_mask=[1, 0],
        reward=reward,
        eid=EID(batch=0, task=task, run=run, step=step),
    )


def test_run_mode_uses_last_step_reward_for_every_step() -> None:
    # run 0 arrives out of order; its step-1 reward 0.3 is not the outcome and is ignored
    run0 = [_step(0, 0, 2, 1.0), _step(0, 0, 0, None), _step(0, 0, 1, 0.3)]
    run1 = [_step(0, 1, 0, None), _step(0, 1, 1, 0.0)]
    lone = [_step(1, 0, 0, None), _step(1, 0, 1, 1.0)]  # task with a single run
    metrics = step_wise_grpo_advantage(run0 + run1 + lone)
    a = 0.5 / math.sqrt(0.5)  # run returns 1, 0: mean 0.5, unbiased std sqrt(0.5)
    for exp in run0:
        assert exp.advantages.tolist() == pytest.approx([a, 0.0], rel=1e-5)
        assert exp.returns.tolist() == [1.0, 0.0]
    for exp in run1:
        assert exp.advantages.tolist() == pytest.approx([-a, 0.0], rel=1e-5)
    assert all(e.advantages.tolist() == [0.0, 0.0] for e in lone)
    assert metrics["run/count"] == 3.0
    assert metrics["group/count"] == 2.0


def test_run_mode_without_std() -> None:
    exps = [_step(0, 0, 0, 1.0), _step(0, 1, 0, 0.0)]
    step_wise_grpo_advantage(exps, std_normalize=False)
    assert [e.advantages[0].item() for e in exps] == [0.5, -0.5]


def test_step_mode_gives_per_step_credit() -> None:
    # run 0: step rewards [1, 0]; run 1: [None → 0, 0]. Run mode would give all zeros
    # (both final rewards are 0); step mode sees the early success of run 0.
    run0 = [_step(0, 0, 1, 0.0), _step(0, 0, 0, 1.0)]
    run1 = [_step(0, 1, 0, None), _step(0, 1, 1, 0.0)]
    step_wise_grpo_advantage(run0 + run1, reward_mode="step", gamma=1.0)
    # G: run0 [1, 0], run1 [0, 0]; pooled mean 0.25, unbiased std 0.5
    by_step0 = {e.eid.step: e for e in run0}
    assert by_step0[0].advantages[0].item() == pytest.approx(1.5, rel=1e-5)
    assert by_step0[1].advantages[0].item() == pytest.approx(-0.5, rel=1e-5)
    assert [e.advantages[0].item() for e in run1] == pytest.approx([-0.5, -0.5], rel=1e-5)
    assert by_step0[0].returns.tolist() == [1.0, 0.0]
    step_wise_grpo_advantage(run0 + run1, reward_mode="run")
    assert all(e.advantages[0].item() == 0.0 for e in run0 + run1)


def test_step_mode_discount() -> None:
    run0 = [_step(0, 0, 0, 0.0), _step(0, 0, 1, 1.0)]
    run1 = [_step(0, 1, 0, 1.0)]
    step_wise_grpo_advantage(run0 + run1, reward_mode="step", gamma=0.5)
    assert [e.returns[0].item() for e in run0 + run1] == [0.5, 1.0, 1.0]
    # pooled G [0.5, 1, 1]: mean 5/6, unbiased std sqrt(1/12)
    std = math.sqrt(1 / 12)
    expected = [(0.5 - 5 / 6) / std, (1 - 5 / 6) / std, (1 - 5 / 6) / std]
    assert [e.advantages[0].item() for e in run0 + run1] == pytest.approx(expected, rel=1e-4)


def test_unknown_mode() -> None:
    with pytest.raises(ValueError, match="run, step"):
        step_wise_grpo_advantage([_step(0, 0, 0, 1.0)], reward_mode="token")
