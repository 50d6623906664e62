"""Request bodies and response parsing of the ``openai`` engine (no server needed)."""

from __future__ import annotations

import pytest

from reinforge.models.engine import SamplingParams
from reinforge.models.engines.openai.protocol import (
    ServerProtocolError,
    completion_body,
    parse_completions,
    parse_prompt_logprobs,
)


def choice(index: int, ids: list[int], lps: list[float], reason: str = "stop") -> dict:
    return {
        "index": index,
        "token_ids": ids,
        "finish_reason": reason,
        "logprobs": {"token_logprobs": lps},
    }


def test_body_sends_token_ids_and_asks_for_ids_back() -> None:
    params = SamplingParams(n=3, temperature=0.7, top_k=5, seed=1, stop=["\n"], max_tokens=9)
    body = completion_body("m", [1, 2, 3], params)
    assert body["prompt"] == [1, 2, 3] and body["n"] == 3 and body["max_tokens"] == 9
    assert body["return_token_ids"] is True and body["logprobs"] == 0
    assert body["top_k"] == 5 and body["seed"] == 1 and body["stop"] == ["\n"]
    assert "top_k" not in completion_body("m", [1], SamplingParams())
    assert completion_body("m", [1], SamplingParams(top_logprobs=2))["return_tokens_as_token_ids"]


def test_parse_orders_choices_and_maps_finish_reasons() -> None:
    body = {"choices": [choice(1, [7], [-0.5], "length"), choice(0, [5, 6], [-1.0, -2.0], "stop")]}
    out = parse_completions(body, SamplingParams(n=2), "http://s")
    assert [c.token_ids for c in out] == [[5, 6], [7]]
    assert out[0].logprobs == [-1.0, -2.0] and out[0].finish_reason == "stop"
    assert out[1].finish_reason == "length"


def test_top_logprobs_keyed_by_token_id() -> None:
    c = choice(0, [5], [-1.0])
    c["logprobs"]["top_logprobs"] = [{"token_id:9": -0.1, "token_id:5": -1.0}]
    out = parse_completions({"choices": [c]}, SamplingParams(top_logprobs=2), "s")
    assert out[0].top_logprobs == [[(9, -0.1), (5, -1.0)]]
    c["logprobs"]["top_logprobs"] = [{"hello": -0.1}]
    with pytest.raises(ServerProtocolError, match="return_tokens_as_token_ids"):
        parse_completions({"choices": [c]}, SamplingParams(top_logprobs=1), "s")


@pytest.mark.parametrize("drop", ["token_ids", "logprobs"])
def test_a_server_without_ids_or_logprobs_is_refused_by_name(drop: str) -> None:
    c = choice(0, [5], [-1.0])
    del c[drop]
    with pytest.raises(ServerProtocolError, match=f"http://here.*'{drop}'"):
        parse_completions({"choices": [c]}, SamplingParams(), "http://here")


def test_mismatched_lengths_and_counts_are_refused() -> None:
    with pytest.raises(ServerProtocolError, match="2 logprobs for 1 tokens"):
        parse_completions({"choices": [choice(0, [5], [-1.0, -2.0])]}, SamplingParams(), "s")
    with pytest.raises(ServerProtocolError, match="1 choices, asked for 2"):
        parse_completions({"choices": [choice(0, [5], [-1.0])]}, SamplingParams(n=2), "s")


def test_prompt_logprobs_pick_each_actual_token() -> None:
    rows = [None, {"8": {"logprob": -1.5}}, {"9": {"logprob": -0.25}, "3": {"logprob": -0.1}}]
    body = {"choices": [{"index": 0, "prompt_logprobs": rows}]}
    assert parse_prompt_logprobs(body, [1, 8, 9], "s") == [-1.5, -0.25]
    with pytest.raises(ServerProtocolError, match="'prompt_logprobs'"):
        parse_prompt_logprobs({"choices": [{"index": 0}]}, [1, 8], "s")
