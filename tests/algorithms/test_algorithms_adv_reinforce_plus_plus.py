"""REINFORCE++: token rewards, discounted returns, KL reward penalty, batch whitening."""

import math

import pytest

from reinforge.algorithms import reinforce_plus_plus_advantage
from reinforge.core import EID, Experience


def _exp(mask: list[int], reward: float | None = None, **kw) -> Experience:
    return Experience(
        tokens=list(range(1 + len(mask))),
        prompt_length=1,
        action_mask=mask,
        reward=reward,
        eid=EID(task=0),
        **kw,
    )


def test_reward_on_last_action_token_then_batch_whitened() -> None:
    a = _exp([1, 1, 0], reward=1.0)  # trailing tool token gets no reward
    b = _exp([1, 1], reward=0.0)
    reinforce_plus_plus_advantage([a, b], gamma=1.0)
    assert a.returns.tolist() == [1.0, 1.0, 0.0]
    assert b.returns.tolist() == [0.0, 0.0]
    # action-token returns 1, 1, 0, 0: mean 0.5, unbiased std sqrt(1/3)
    z = 0.5 * math.sqrt(3.0)
    assert a.advantages.tolist() == pytest.approx([z, z, 0.0], rel=1e-5)
    assert b.advantages.tolist() == pytest.approx([-z, -z], rel=1e-5)


def test_discount() -> None:
    a = _exp([1, 1, 0], reward=1.0)
    b = _exp([1, 1], reward=0.0)
    reinforce_plus_plus_advantage([a, b], gamma=0.5)
    assert a.returns.tolist() == [0.5, 1.0, 0.0]
    # returns 0.5, 1, 0, 0: mean 0.375, unbiased var 0.6875 / 3
    std = math.sqrt(0.6875 / 3)
    assert a.advantages.tolist() == pytest.approx([0.125 / std, 0.625 / std, 0.0], rel=1e-5)
    assert b.advantages.tolist() == pytest.approx([-0.375 / std] * 2, rel=1e-5)


def test_token_level_reward_and_skipped_non_action_tokens() -> None:
    exp = _exp([1, 0, 1], token_level_reward=[0.0, 7.0, 1.0])  # 7.0 sits on a tool token
    reinforce_plus_plus_advantage([exp], gamma=0.5)
    assert exp.returns.tolist() == [0.5, 0.0, 1.0]  # one discount step, tool token skipped


def test_kl_reward_penalty() -> None:
    exp = _exp([1, 1], reward=1.0, logprobs=[math.log(0.5), math.log(0.5)])
    ref = [[math.log(0.25), math.log(0.5)]]
    metrics = reinforce_plus_plus_advantage([exp], ref_logprobs=ref, kl_penalty="k1", kl_coef=0.1)
    # token rewards [−0.1·log 2, 1] → returns [1 − 0.1·log 2, 1]
    assert exp.returns.tolist() == pytest.approx([1.0 - 0.1 * math.log(2), 1.0])
    assert exp.advantages.tolist() == pytest.approx([-1 / math.sqrt(2), 1 / math.sqrt(2)], rel=1e-4)
    assert metrics["kl_penalty/mean"] == pytest.approx(math.log(2) / 2)


def test_kl_penalty_needs_logprobs() -> None:
    with pytest.raises(ValueError, match="logprobs"):
        reinforce_plus_plus_advantage([_exp([1], reward=1.0)], ref_logprobs=[[0.0]], kl_coef=0.1)
