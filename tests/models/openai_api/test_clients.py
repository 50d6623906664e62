"""The in-process OpenAI clients: official SDK objects served by the ModelWrapper."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest

from reinforge.models.engines.mock import MockEngine
from reinforge.models.model_wrapper import ModelWrapper

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "parameters": {"type": "object", "properties": {"a": {}, "b": {}}},
        },
    }
]


def wrapper(replies=None, **engine_kwargs) -> ModelWrapper:
    return ModelWrapper(MockEngine(replies=replies, **engine_kwargs), enable_history=True)


def test_chat_completion_shape_and_token_ids() -> None:
    model = wrapper(["Paris."])
    client = model.get_openai_client()
    assert isinstance(client, openai.OpenAI)
    resp = client.chat.completions.create(
        model=client.model_path, messages=[{"role": "user", "content": "Capital of France?"}]
    )
    choice = resp.choices[0]
    assert choice.message.content == "Paris."
    assert choice.finish_reason == "stop"
    exp = model.extract_experience_from_history()[0]
    assert resp.model_extra["prompt_token_ids"] == exp.prompt_tokens.tolist()
    assert choice.model_extra["token_ids"] == exp.response_tokens.tolist()
    assert resp.usage.prompt_tokens == exp.prompt_length
    assert resp.usage.completion_tokens == exp.response_length
    assert client.models.list().data[0].id == client.model_path


def test_sampling_arguments_reach_the_engine() -> None:
    model = wrapper(["one two three four five six"])
    client = model.get_openai_client()
    resp = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "q"}],
        n=3,
        max_tokens=4,
        seed=1,
        stop=["never"],
        temperature=0.5,
        top_p=0.9,
    )
    assert len(resp.choices) == 3
    assert all(c.finish_reason == "length" for c in resp.choices)
    assert all(len(c.model_extra["token_ids"]) == 4 for c in resp.choices)
    assert resp.usage.completion_tokens == 12
    stopped = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "q"}], stop="three"
    )
    assert stopped.choices[0].message.content == "one two "


def test_logprobs_and_top_logprobs() -> None:
    model = wrapper(["abc"])
    client = model.get_openai_client()
    resp = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "q"}], logprobs=True, top_logprobs=2
    )
    content = resp.choices[0].logprobs.content
    exp = model.extract_experience_from_history()[0]
    assert [c.logprob for c in content] == pytest.approx(exp.logprobs.tolist())
    assert "".join(c.token for c in content[:3]) == "abc"
    assert content[0].top_logprobs[0].token == "a"
    assert "top_logprobs" not in exp.info  # answered, not stored
    plain = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
    assert plain.choices[0].logprobs is None


def test_streaming_reassembles_to_the_same_content() -> None:
    model = wrapper(["The answer is 42, surely."])
    client = model.get_openai_client()
    msgs = [{"role": "user", "content": "q"}]
    whole = client.chat.completions.create(model="m", messages=msgs).choices[0].message.content
    chunks = list(
        client.chat.completions.create(
            model="m", messages=msgs, stream=True, stream_options={"include_usage": True}
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) > 3
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_tool_calls_in_native_format() -> None:
    model = wrapper(['<tool_call>[{"name": "add", "arguments": {"a": 2, "b": 3}}]</tool_call>'])
    client = model.get_openai_client()
    resp = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "2+3?"}], tools=TOOLS
    )
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.function.name == "add" and json.loads(call.function.arguments) == {"a": 2, "b": 3}
    exp = model.extract_experience_from_history()[0]
    assert '"name": "add"' in exp.prompt_text  # the tools were put in front of the model
    streamed = list(
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "2+3?"}], tools=TOOLS, stream=True
        )
    )
    deltas = [d for c in streamed for d in (c.choices[0].delta.tool_calls or [])]
    assert deltas[0].function.name == "add"


def test_malformed_tool_call_is_recorded_not_raised() -> None:
    bad = "<tool_call>[{name: add}]</tool_call>"
    model = wrapper([bad])
    client = model.get_openai_client()
    resp = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "2+3?"}], tools=TOOLS
    )
    assert resp.choices[0].message.content == bad
    assert resp.choices[0].message.tool_calls is None
    exp = model.extract_experience_from_history()[0]
    assert "malformed tool call" in exp.info["tool_call_error"]


def test_bad_requests_are_400_with_the_reason() -> None:
    client = wrapper().get_openai_client()
    with pytest.raises(openai.BadRequestError, match="unknown role 'wizard'"):
        client.chat.completions.create(model="m", messages=[{"role": "wizard", "content": "x"}])
    with pytest.raises(openai.BadRequestError, match="non-empty list"):
        client.chat.completions.create(model="m", messages=[])
    with pytest.raises(openai.BadRequestError, match="messages\\[0\\] must be a dict"):
        client.chat.completions.create(model="m", messages=["hi"])
    with pytest.raises(openai.BadRequestError, match="'n' must be a int"):
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], n="2"
        )
    with pytest.raises(openai.BadRequestError, match="tool_choice"):
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "x"}],
            tools=TOOLS,
            tool_choice="required",
        )
    with pytest.raises(openai.BadRequestError, match="presence_penalty"):
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], presence_penalty=1.0
        )


def test_context_length_exceeded_marks_the_conversation_truncated() -> None:
    model = wrapper(["x" * 30], max_model_len=120)
    client = model.get_openai_client()
    msgs = [{"role": "user", "content": "hello"}]
    first = client.chat.completions.create(model="m", messages=msgs)
    msgs += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "user", "content": "y" * 80},
    ]
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="m", messages=msgs)
    assert info.value.code == "context_length_exceeded"
    (exp,) = model.extract_experience_from_history()
    assert exp.truncate_status == "prompt_truncated"


def test_completions_endpoint_with_text_and_token_prompts() -> None:
    model = wrapper(["42"])
    client = model.get_openai_client()
    resp = client.completions.create(model="m", prompt="6*7=", max_tokens=5, logprobs=1)
    assert resp.choices[0].text == "42"
    assert len(resp.choices[0].logprobs.token_logprobs) == len(
        resp.choices[0].model_extra["token_ids"]
    )
    ids = model.tokenizer.encode("6*7=")
    by_ids = client.completions.create(model="m", prompt=ids, max_tokens=5)
    assert by_ids.choices[0].model_extra["prompt_token_ids"] == ids
    two = client.completions.create(model="m", prompt=["a", "b"], n=2)
    assert len(two.choices) == 4


def test_async_client_records_history() -> None:
    model = wrapper(["hi there"])

    async def main() -> list[str]:
        client = model.get_openai_async_client()
        assert isinstance(client, openai.AsyncOpenAI)
        resps = await asyncio.gather(
            *(
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": f"q{i}"}]
                )
                for i in range(5)
            )
        )
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "s"}], stream=True
        )
        text = "".join([c.choices[0].delta.content or "" async for c in stream])
        return [r.choices[0].message.content for r in resps] + [text]

    assert asyncio.run(main()) == ["hi there"] * 6
    assert len(model.extract_experience_from_history()) == 6
    assert model.get_openai_async_client() is model.get_openai_async_client()


def test_n_is_capped_and_empty_stop_strings_are_refused() -> None:
    client = wrapper(["x"]).get_openai_client()
    with pytest.raises(openai.BadRequestError, match="'n' must be between 1 and 128"):
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "q"}], n=10**9
        )
    with pytest.raises(openai.BadRequestError, match="stop strings must be non-empty"):
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "q"}], stop=[""]
        )
