"""Operator interfaces: legacy wrapping, auxiliary models, and create_operators errors."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from reinforge.buffer.operators import (
    EXPERIENCE_OPERATORS,
    ExperienceOperator,
    ExperienceOperatorV1,
    LegacyOperatorAdapter,
    OperatorConfigError,
    RewardFilter,
    create_operators,
    ensure_v1,
)
from reinforge.core import EID, Experience, RegistryError


def make_exp(task: int, reward: float | None, text: str = "") -> Experience:
    return Experience(
        tokens=[1, 2, 3], prompt_length=1, reward=reward, eid=EID(task=task), response_text=text
    )


class DoubleReward(ExperienceOperator):
    """A legacy operator; records the thread it ran in and whether it was closed."""

    def __init__(self) -> None:
        self.thread: int | None = None
        self.closed = False

    def process(self, exps: list[Experience]) -> tuple[list[Experience], dict]:
        self.thread = threading.get_ident()
        for exp in exps:
            exp.reward = 2 * exp.reward
        return exps, {"double/count": len(exps)}

    def close(self) -> None:
        self.closed = True


class FakeCompletions:
    """Stands in for ``AsyncOpenAI().chat.completions``: scores 1.0 if 'yes' is in the prompt."""

    def __init__(self) -> None:
        self.calls = 0

    async def create(self, *, model: str, messages: list[dict[str, str]]) -> Any:
        self.calls += 1
        verdict = "1.0" if "yes" in messages[-1]["content"] else "0.0"
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=verdict))])


class JudgeOperator(ExperienceOperatorV1):
    """A V1 operator that asks auxiliary model ``judge`` to score each response."""

    def __init__(self, model_id: str = "judge") -> None:
        self.model_id = model_id
        self.prepared = False

    async def prepare(self) -> None:
        self.prepared = True

    async def process(self, exps: list[Experience]) -> tuple[list[Experience], dict]:
        assert self.auxiliary_models is not None
        client = self.auxiliary_models[self.model_id][0]
        replies = await asyncio.gather(
            *(
                client.chat.completions.create(
                    model="judge", messages=[{"role": "user", "content": e.response_text}]
                )
                for e in exps
            )
        )
        for exp, reply in zip(exps, replies, strict=True):
            exp.reward = float(reply.choices[0].message.content)
        return exps, {"judge/calls": float(len(exps))}


@pytest.fixture
def registered_test_ops():
    """Register the test operators for one test, then remove them again."""
    names = {"double_reward": DoubleReward, "llm_judge_test": JudgeOperator}
    for name, cls in names.items():
        EXPERIENCE_OPERATORS.register_module(name)(cls)
    yield
    for name in names:
        EXPERIENCE_OPERATORS._modules.pop(name, None)


def test_legacy_operator_is_wrapped_and_runs_in_a_thread(registered_test_ops) -> None:
    (op,) = create_operators([{"name": "double_reward"}])
    assert isinstance(op, LegacyOperatorAdapter)
    assert isinstance(op, ExperienceOperatorV1)
    exps = [make_exp(0, 1.5), make_exp(0, 2.0)]

    async def run() -> tuple[list[Experience], dict]:
        await op.prepare()
        result = await op.process(exps)
        await op.close()
        return result

    out, metrics = asyncio.run(run())
    assert [e.reward for e in out] == [3.0, 4.0]
    assert metrics == {"double/count": 2}
    assert op.operator.thread != threading.get_ident()
    assert op.operator.closed


def test_ensure_v1_passes_v1_through_and_rejects_other_objects() -> None:
    v1 = RewardFilter()
    assert ensure_v1(v1) is v1
    assert isinstance(ensure_v1(DoubleReward()), LegacyOperatorAdapter)
    with pytest.raises(TypeError, match="not an experience operator"):
        ensure_v1(object())  # type: ignore[arg-type]


def test_v1_operator_uses_auxiliary_model(registered_test_ops) -> None:
    completions = FakeCompletions()
    client = SimpleNamespace(chat=SimpleNamespace(completions=completions))
    (op,) = create_operators([{"name": "llm_judge_test", "args": {}}], {"judge": [client]})
    assert op.auxiliary_models == {"judge": [client]}
    exps = [make_exp(0, None, "yes indeed"), make_exp(0, None, "no")]

    async def run() -> tuple[list[Experience], dict]:
        await op.prepare()
        return await op.process(exps)

    out, metrics = asyncio.run(run())
    assert op.prepared
    assert [e.reward for e in out] == [1.0, 0.0]
    assert completions.calls == 2
    assert metrics == {"judge/calls": 2.0}


def test_auxiliary_models_default_to_none() -> None:
    (op,) = create_operators([{"name": "reward_filter", "args": {"threshold": 0.5}}])
    assert op.auxiliary_models is None


@dataclass
class OperatorConfig:
    """Like a config-schema object: attributes rather than dict keys."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)


def test_config_objects_and_dicts_are_both_accepted() -> None:
    ops = create_operators(
        [
            OperatorConfig("reward_filter", {"threshold": 0.5}),
            {"name": "invalid_reward_filter"},
            {"name": "reward_std_filter", "args": None},
        ]
    )
    assert [type(op).__name__ for op in ops] == [
        "RewardFilter",
        "InvalidRewardFilter",
        "RewardStdFilter",
    ]
    assert ops[0].threshold == 0.5


def test_unknown_operator_lists_known_names() -> None:
    with pytest.raises(RegistryError) as info:
        create_operators([{"name": "reward_filtr"}])
    message = str(info.value)
    assert "reward_filtr" in message
    assert "Did you mean 'reward_filter'" in message
    for known in ("reward_filter", "reward_std_filter", "group_advantage", "pass_rate_calculator"):
        assert known in message


def test_dotted_path_resolves_without_registration() -> None:
    (op,) = create_operators([{"name": "reinforge.buffer.operators.RewardFilter"}])
    assert isinstance(op, RewardFilter)


@pytest.mark.parametrize(
    ("config", "pattern"),
    [
        ({"name": "reward_filter", "args": {"treshold": 1}}, "operator 'reward_filter'.*treshold"),
        ({"name": "reward_std_filter", "args": {"threshold": -1}}, "'reward_std_filter'.*>= 0"),
        ({"name": "reward_shaping_mapper", "args": {"rules": []}}, "'reward_shaping_mapper'"),
        (
            {"name": "reward_shaping_mapper", "args": {"rules": [{"kind": "bonus"}]}},
            "'reward_shaping_mapper'.*unknown shaping rule kind 'bonus'",
        ),
        ({"name": "group_advantage", "args": {"algorithm": "nope"}}, "'group_advantage'.*nope"),
        (
            {
                "name": "group_advantage",
                "args": {"advantage_fn": "grpo", "advantage_args": {"x": 1}},
            },
            "'group_advantage'.*x",
        ),
        ({"name": "reward_filter", "args": [1]}, "args of operator 'reward_filter' must be"),
        ({"name": "reward_filter", "params": {}}, "unknown keys \\['params'\\]"),
        ({"args": {}}, "non-empty string 'name'"),
    ],
)
def test_bad_configs_raise_errors_naming_the_operator(config: dict, pattern: str) -> None:
    with pytest.raises(OperatorConfigError, match=pattern):
        create_operators([config])


def test_registered_non_operator_is_rejected() -> None:
    EXPERIENCE_OPERATORS.register_module("not_an_operator_test")(dict)
    try:
        with pytest.raises(OperatorConfigError, match=r"'not_an_operator_test'.*not an experience"):
            create_operators([{"name": "not_an_operator_test"}])
    finally:
        EXPERIENCE_OPERATORS._modules.pop("not_an_operator_test", None)
