"""REINFORCE with and without the batch-mean baseline."""

import pytest

from reinforge.algorithms import reinforce_advantage
from reinforge.core import EID, Experience


def _batch() -> list[Experience]:
    return [
        Experience(tokens=[1, 2, 3], prompt_length=1, reward=r, eid=EID(task=i))
        for i, r in enumerate([1.0, 0.0, 0.5])
    ]


def test_batch_mean_baseline_ignores_groups() -> None:
    exps = _batch()
    metrics = reinforce_advantage(exps)
    assert [e.advantages.tolist() for e in exps] == [[0.5, 0.5], [-0.5, -0.5], [0.0, 0.0]]
    assert metrics["baseline/value"] == pytest.approx(0.5)


def test_no_baseline() -> None:
    exps = _batch()
    reinforce_advantage(exps, baseline="none")
    assert [e.advantages[0].item() for e in exps] == [1.0, 0.0, 0.5]


def test_unknown_baseline() -> None:
    with pytest.raises(ValueError, match="mean"):
        reinforce_advantage(_batch(), baseline="median")
