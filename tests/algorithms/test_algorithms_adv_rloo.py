"""RLOO leave-one-out baseline."""

import pytest

from reinforge.algorithms import rloo_advantage
from reinforge.core import EID, Experience


def _exp(task: int, run: int, reward: float) -> Experience:
    return Experience(
        tokens=[1, 2, 3, 4], prompt_length=2, reward=reward, eid=EID(task=task, run=run)
    )


def test_leave_one_out() -> None:
    group = [_exp(0, i, r) for i, r in enumerate([3.0, 1.0, 2.0])]
    single = _exp(1, 0, 5.0)
    rloo_advantage([*group, single])
    # 3 − (1+2)/2 = 1.5; 1 − (3+2)/2 = −1.5; 2 − (3+1)/2 = 0
    assert [e.advantages.tolist() for e in group] == [[1.5, 1.5], [-1.5, -1.5], [0.0, 0.0]]
    assert single.advantages.tolist() == [0.0, 0.0]
    assert group[0].returns.tolist() == [3.0, 3.0]


def test_binary_rewards() -> None:
    group = [_exp(0, i, r) for i, r in enumerate([1.0, 0.0, 0.0, 1.0])]
    rloo_advantage(group)
    assert [e.advantages[0].item() for e in group] == pytest.approx([2 / 3, -2 / 3, -2 / 3, 2 / 3])
