"""The built-in reward functions are registered and resolvable by name."""

from __future__ import annotations

import pytest

from reinforge.core import RegistryError, Task
from reinforge.rewards import (
    REWARD_FUNCTIONS,
    AccuracyReward,
    CountdownReward,
    FormatReward,
    MathBoxedReward,
    MathReward,
    ReasoningGymReward,
    RewardFn,
)

BUILT_INS = {
    "accuracy_reward": AccuracyReward,
    "format_reward": FormatReward,
    "math_reward": MathReward,
    "math_boxed_reward": MathBoxedReward,
    "countdown_reward": CountdownReward,
    "reasoning_gym_reward": ReasoningGymReward,
}


@pytest.mark.parametrize(("name", "cls"), BUILT_INS.items())
def test_lookup_by_name(name: str, cls: type) -> None:
    assert REWARD_FUNCTIONS.get(name) is cls
    assert issubclass(cls, RewardFn)
    assert isinstance(cls(), RewardFn)


def test_task_resolves_reward_fn_name() -> None:
    assert Task(reward_fn="countdown_reward").reward_fn_cls is CountdownReward
    assert REWARD_FUNCTIONS.get("reinforge.rewards.math_reward.MathReward") is MathReward


def test_unknown_name_lists_known_names() -> None:
    with pytest.raises(RegistryError) as info:
        REWARD_FUNCTIONS.get("math_rewrd")
    message = str(info.value)
    assert "math_reward" in message
    for name in BUILT_INS:
        assert name in message


def test_constructor_keeps_kwargs() -> None:
    reward = MathReward(timeout=2.0, extra_option=1)
    assert reward.kwargs["timeout"] == 2.0 and reward.kwargs["extra_option"] == 1
