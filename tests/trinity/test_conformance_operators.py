"""``trinity.buffer.operators`` used the way Trinity-RFT operator code uses it:
``ExperienceOperator`` (sync), ``ExperienceOperatorV1`` (async, auxiliary models),
``EXPERIENCE_OPERATORS`` and ``create_operators``."""

from __future__ import annotations

import asyncio

from reinforge.trinity.buffer.operators import (
    EXPERIENCE_OPERATORS,
    ExperienceOperator,
    ExperienceOperatorV1,
    create_operators,
)
from reinforge.trinity.common.experience import EID, Experience


def _exps(rewards: list[float]) -> list[Experience]:
    return [
        Experience(tokens=[1, 2, 3], prompt_length=1, reward=r, eid=EID(task=0, run=i))
        for i, r in enumerate(rewards)
    ]


class DropNegative(ExperienceOperator):
    def __init__(self, floor: float = 0.0):
        self.floor = floor
        self.closed = False

    def process(self, exps):
        kept = [e for e in exps if e.reward >= self.floor]
        return kept, {"dropped": len(exps) - len(kept)}

    def close(self):
        self.closed = True


class ScaleRewards(ExperienceOperatorV1):
    def __init__(self, factor: float = 2.0):
        self.factor = factor
        self.prepared = False

    async def prepare(self):
        self.prepared = True

    async def process(self, exps):
        for exp in exps:
            exp.reward = exp.reward * self.factor
        return exps, {"scaled": len(exps)}


def test_a_sync_operator_returns_experiences_and_metrics() -> None:
    op = DropNegative(floor=0.5)
    kept, metrics = op.process(_exps([0.0, 1.0, 0.7]))
    assert [e.reward for e in kept] == [1.0, 0.7]
    assert metrics == {"dropped": 1}
    op.close()
    assert op.closed


def test_an_async_operator_has_prepare_process_close_and_auxiliary_models() -> None:
    op = ScaleRewards(factor=3.0)
    op.set_auxiliary_model({"judge": []})
    op.set_auxiliary_model(None)

    async def go():
        await op.prepare()
        out = await op.process(_exps([1.0, 0.5]))
        await op.close()
        return out

    exps, metrics = asyncio.run(go())
    assert op.prepared
    assert [e.reward for e in exps] == [3.0, 1.5] and metrics == {"scaled": 2}


def test_create_operators_builds_registered_operators_as_v1() -> None:
    assert "reward_filter" in EXPERIENCE_OPERATORS.modules
    ops = create_operators([{"name": "reward_filter", "args": {"threshold": 0.5}}])
    assert len(ops) == 1 and isinstance(ops[0], ExperienceOperatorV1)
    kept, metrics = asyncio.run(ops[0].process(_exps([0.0, 1.0])))
    assert [e.reward for e in kept] == [1.0]
    assert isinstance(metrics, dict)
