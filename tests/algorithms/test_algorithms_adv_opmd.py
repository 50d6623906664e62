"""OPMD's soft (log-mean-exp) group baseline."""

import math

import pytest

from reinforge.algorithms import opmd_advantage
from reinforge.core import EID, Experience


def _group(rewards: list[float], task: int = 0) -> list[Experience]:
    return [
        Experience(tokens=[1, 2, 3], prompt_length=1, reward=r, eid=EID(task=task, run=i))
        for i, r in enumerate(rewards)
    ]


@pytest.mark.parametrize("tau", [1.0, 0.5])
def test_log_mean_exp_baseline(tau: float) -> None:
    exps = _group([1.0, 0.0])
    opmd_advantage(exps, tau=tau)
    baseline = tau * math.log((math.exp(1 / tau) + 1) / 2)  # τ=1: 0.620115, τ=0.5: 0.716890
    assert exps[0].advantages.tolist() == pytest.approx([1 - baseline] * 2, rel=1e-5)
    assert exps[1].advantages.tolist() == pytest.approx([-baseline] * 2, rel=1e-5)
    assert exps[0].returns.tolist() == [1.0, 1.0]


def test_large_tau_tends_to_group_mean_and_mean_option() -> None:
    exps = _group([1.0, 0.0])
    opmd_advantage(exps, tau=1e4)
    assert [e.advantages[0].item() for e in exps] == pytest.approx([0.5, -0.5], abs=1e-4)
    opmd_advantage(exps, baseline="mean")
    assert [e.advantages[0].item() for e in exps] == [0.5, -0.5]


def test_single_and_flat_groups_get_zero() -> None:
    exps = _group([0.7], task=0) + _group([2.0, 2.0], task=1)
    opmd_advantage(exps)
    assert [e.advantages[0].item() for e in exps] == pytest.approx([0.0, 0.0, 0.0], abs=1e-6)


def test_bad_tau() -> None:
    with pytest.raises(ValueError, match="tau"):
        opmd_advantage(_group([1.0]), tau=0.0)
