"""GRPO / Dr. GRPO group-relative advantages."""

import math

import pytest

from reinforge.algorithms import ADVANTAGE_FNS, grpo_advantage
from reinforge.core import EID, Experience


def _exp(task: int, reward: float | None, run: int = 0, mask: tuple[int, ...] = (1, 0, 1)):
    return Experience(
        tokens=list(range(2 + len(mask))),
        prompt_length=2,
        action_mask=list(mask),
        reward=reward,
        eid=EID(batch=0, task=task, run=run),
    )


def test_group_normalisation_and_edge_groups() -> None:
    group_a = [_exp(0, r, run=i) for i, r in enumerate([1.0, 0.0, 0.0, 1.0])]
    single = [_exp(1, 0.5)]
    flat = [_exp(2, 1.0, run=0), _exp(2, 1.0, run=1)]
    exps = group_a + single + flat
    metrics = ADVANTAGE_FNS.get("grpo")(exps)
    # group A: mean 0.5, unbiased std sqrt(1/3) → ±0.5·sqrt(3)
    a = 0.5 * math.sqrt(3.0)
    assert [e.advantages.tolist() for e in group_a] == [
        pytest.approx([a, 0.0, a], rel=1e-5),
        pytest.approx([-a, 0.0, -a], rel=1e-5),
        pytest.approx([-a, 0.0, -a], rel=1e-5),
        pytest.approx([a, 0.0, a], rel=1e-5),
    ]
    assert group_a[0].returns.tolist() == [1.0, 0.0, 1.0]  # raw reward on action tokens
    assert single[0].advantages.tolist() == [0.0, 0.0, 0.0]  # group of one
    assert all(e.advantages.tolist() == [0.0, 0.0, 0.0] for e in flat)  # all-equal rewards
    assert metrics["group/count"] == 3.0
    assert metrics["group/flat_fraction"] == pytest.approx(2 / 3)
    assert metrics["reward/mean"] == pytest.approx(4.5 / 7)


def test_dr_grpo_skips_std_scaling() -> None:
    exps = [_exp(0, r, run=i) for i, r in enumerate([1.0, 0.0, 0.0, 1.0])]
    grpo_advantage(exps, std_normalize=False)
    assert [e.advantages[0].item() for e in exps] == pytest.approx([0.5, -0.5, -0.5, 0.5])


def test_missing_reward_is_an_error() -> None:
    with pytest.raises(ValueError, match="no reward"):
        grpo_advantage([_exp(0, None)])
