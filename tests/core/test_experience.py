"""Experience: validation of per-token fields, derived properties, serialisation round trips."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reinforge.core import EID, Experience


def full_experience() -> Experience:
    return Experience(
        tokens=[5, 6, 7, 8, 9],
        prompt_length=2,
        logprobs=[-0.5, -1.25, -2.0],
        action_mask=[1, 0, 1],
        reward=0.75,
        token_level_reward=[0.0, 0.0, 0.75],
        advantages=[0.1, 0.2, 0.3],
        returns=[1.0, 2.0, 3.0],
        eid=EID(batch=1, task="t", run=2, step=3, suffix="abc"),
        info={"model_version": 4, "nested": {"k": [1, 2]}},
        metrics={"len": 3.0},
        messages=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
        tools=[{"type": "function", "function": {"name": "f"}}],
        response_text="yo",
        prompt_text="hi",
        truncate_status="response_truncated",
    )


def assert_same(a: Experience, b: Experience) -> None:
    for name in (
        "tokens",
        "logprobs",
        "action_mask",
        "token_level_reward",
        "advantages",
        "returns",
    ):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert x.dtype == y.dtype, name
            assert torch.equal(x, y), name
    for name in (
        "prompt_length",
        "reward",
        "info",
        "metrics",
        "messages",
        "tools",
        "response_text",
        "prompt_text",
        "truncate_status",
    ):
        assert getattr(a, name) == getattr(b, name), name
    assert a.eid == b.eid


def test_inputs_become_tensors_of_fixed_dtypes() -> None:
    exp = Experience(tokens=np.array([1, 2, 3], dtype=np.int32), prompt_length=1, logprobs=[-1, -2])
    assert exp.tokens.dtype == torch.long
    assert exp.logprobs.dtype == torch.float32
    assert exp.action_mask.dtype == torch.bool
    assert exp.action_mask.tolist() == [True, True]
    assert exp.response_length == 2
    assert exp.prompt_tokens.tolist() == [1]
    assert exp.response_tokens.tolist() == [2, 3]


@pytest.mark.parametrize(
    "name", ["logprobs", "action_mask", "token_level_reward", "advantages", "returns"]
)
def test_per_token_length_mismatch(name: str) -> None:
    with pytest.raises(
        ValueError, match=rf"Experience\.{name} has 2 entries but the response has 3 tokens"
    ):
        Experience(tokens=[1, 2, 3, 4], prompt_length=1, **{name: [0, 1]})


@pytest.mark.parametrize("prompt_length", [-1, 5])
def test_prompt_length_outside_tokens(prompt_length: int) -> None:
    with pytest.raises(ValueError, match=f"prompt_length={prompt_length} is outside the 4 tokens"):
        Experience(tokens=[1, 2, 3, 4], prompt_length=prompt_length)


def test_experience_type() -> None:
    assert Experience(tokens=[1, 2, 3], prompt_length=1).experience_type == "single_turn"
    multi = Experience(tokens=[1, 2, 3], prompt_length=1, action_mask=[1, 0])
    assert multi.experience_type == "multi_turn"


def test_eid_given_as_string() -> None:
    exp = Experience(tokens=[1, 2], prompt_length=1, eid="0/1/2/3/zz")
    assert exp.eid == EID(batch=0, task=1, run=2, step=3, suffix="zz")


def test_bytes_round_trip() -> None:
    exp = full_experience()
    back = Experience.from_bytes(exp.to_bytes())
    assert_same(exp, back)
    back.tokens[0] = 99  # owns its memory
    assert exp.tokens[0] == 5


def test_bytes_round_trip_minimal() -> None:
    exp = Experience(tokens=[1, 2, 3], prompt_length=3)
    back = Experience.from_bytes(exp.to_bytes())
    assert_same(exp, back)
    assert back.logprobs is None and back.response_length == 0


def test_dict_round_trip() -> None:
    exp = full_experience()
    data = exp.to_dict()
    assert data["eid"] == "1/t/2/3/abc"
    assert data["action_mask"] == [1, 0, 1]
    assert data["tokens"] == [5, 6, 7, 8, 9]
    assert_same(exp, Experience.from_dict(data))


def test_to_bytes_serialises_tensors_in_info() -> None:
    exp = Experience(
        tokens=[1, 2], prompt_length=1, info={"t": torch.tensor([1, 2]), "n": np.float32(0.5)}
    )
    assert Experience.from_bytes(exp.to_bytes()).info == {"t": [1, 2], "n": 0.5}
