"""The HTTP server of ``reinforge serve``, driven by the official ``openai`` SDK.

A real uvicorn server runs on a free loopback port in a background thread; the
client goes over TCP exactly as an external agent would. Most tests use the mock
engine (instant, deterministic replies chosen by the prompt); one module-level
fixture serves the tiny random SmolLM2 through the hf engine for real token ids
and log-probabilities.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import openai
import pytest
from fastapi.testclient import TestClient

from reinforge.models import ModelWrapper, create_engine
from reinforge.models.engines.mock import MockEngine, fake_logprob
from reinforge.models.openai_api.server import ServerThread, create_app

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
GOOD_CALL = '<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_call>'
BROKEN_CALL = '<tool_call>[{"name": "get_weather", "arguments": </tool_call>'
MAX_LEN = 2048


def mock_reply(prompt: str, index: int) -> str:
    """The scripted policy: keywords in the prompt pick the reply; samples differ by index."""
    if "CALL_TOOL" in prompt:
        return GOOD_CALL
    if "BROKEN_TOOL" in prompt:
        return BROKEN_CALL
    if "STOP_TEST" in prompt:
        return "alpha beta STOP gamma"
    return f"Sample {index}: héllo wörld, the answer is 42."


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


@pytest.fixture(scope="module")
def mock_model() -> ModelWrapper:
    engine = MockEngine(replies=mock_reply, max_model_len=MAX_LEN)
    return ModelWrapper(engine, model_name="mock-policy", default_max_tokens=256)


@pytest.fixture(scope="module")
def server(mock_model: ModelWrapper) -> Iterator[ServerThread]:
    with ServerThread(create_app(mock_model.openai_service)) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server: ServerThread) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=30)


# ---- chat ---------------------------------------------------------------------------


def test_chat_completion_has_token_ids_and_usage(
    client: openai.OpenAI, mock_model: ModelWrapper
) -> None:
    resp = client.chat.completions.create(model="mock-policy", messages=user("hi"))
    choice = resp.choices[0]
    assert resp.model == "mock-policy"
    assert choice.message.role == "assistant"
    assert choice.message.content == "Sample 0: héllo wörld, the answer is 42."
    assert choice.finish_reason == "stop"
    _, prompt_ids = mock_model.chat_prompts.render(user("hi"))
    assert resp.model_extra["prompt_token_ids"] == prompt_ids
    ids = choice.model_extra["token_ids"]
    tok = mock_model.tokenizer
    assert ids[-1] in tok.eos_token_ids
    assert tok.decode(ids) == choice.message.content
    assert resp.usage.prompt_tokens == len(prompt_ids)
    assert resp.usage.completion_tokens == len(ids)
    assert resp.usage.total_tokens == len(prompt_ids) + len(ids)


def test_n_samples_are_separate_choices(client: openai.OpenAI) -> None:
    resp = client.chat.completions.create(model="m", messages=user("hi"), n=3, seed=7)
    assert [c.index for c in resp.choices] == [0, 1, 2]
    assert [c.message.content[:8] for c in resp.choices] == ["Sample 0", "Sample 1", "Sample 2"]
    # the prompt is counted once for the n samples
    assert resp.usage.prompt_tokens == len(resp.model_extra["prompt_token_ids"])


def test_stop_and_max_tokens(client: openai.OpenAI) -> None:
    resp = client.chat.completions.create(model="m", messages=user("STOP_TEST"), stop=["STOP"])
    assert resp.choices[0].message.content == "alpha beta "
    resp = client.chat.completions.create(model="m", messages=user("hi"), max_tokens=3)
    choice = resp.choices[0]
    assert choice.finish_reason == "length"
    assert len(choice.model_extra["token_ids"]) == 3
    assert choice.message.content == "Sam"
    assert resp.usage.completion_tokens == 3


def test_logprobs_and_top_logprobs(client: openai.OpenAI) -> None:
    resp = client.chat.completions.create(
        model="m", messages=user("hi"), logprobs=True, top_logprobs=2, max_tokens=6
    )
    choice = resp.choices[0]
    ids = choice.model_extra["token_ids"]
    start = len(resp.model_extra["prompt_token_ids"])
    content = choice.logprobs.content
    assert [c.token for c in content] == list("Sample")
    assert [c.logprob for c in content] == pytest.approx(
        [fake_logprob(t, start + j) for j, t in enumerate(ids)]
    )
    # the mock reports its own choice as the single alternative
    assert all(len(c.top_logprobs) == 1 for c in content)
    assert all(c.top_logprobs[0].token == c.token for c in content)
    # without logprobs the field is null
    plain = client.chat.completions.create(model="m", messages=user("hi"), max_tokens=2)
    assert plain.choices[0].logprobs is None


def test_streaming_reassembles_to_the_plain_response(client: openai.OpenAI) -> None:
    kwargs = {"model": "m", "messages": user("hi"), "n": 2, "logprobs": True}
    plain = client.chat.completions.create(**kwargs)
    texts: dict[int, str] = {0: "", 1: ""}
    lps: dict[int, list[float]] = {0: [], 1: []}
    finish: dict[int, str] = {}
    usage = None
    chunks = 0
    for chunk in client.chat.completions.create(
        **kwargs, stream=True, stream_options={"include_usage": True}
    ):
        chunks += 1
        assert chunk.object == "chat.completion.chunk"
        if chunk.usage is not None:
            usage = chunk.usage
        for c in chunk.choices:
            texts[c.index] += c.delta.content or ""
            if c.logprobs is not None:
                lps[c.index] += [x.logprob for x in c.logprobs.content]
            if c.finish_reason:
                finish[c.index] = c.finish_reason
    assert chunks > 10  # one chunk per token, not one blob
    for choice in plain.choices:
        assert texts[choice.index] == choice.message.content
        assert lps[choice.index] == [x.logprob for x in choice.logprobs.content][: len(lps[0])]
        assert finish[choice.index] == "stop"
    assert usage is not None and usage.completion_tokens == plain.usage.completion_tokens


def test_stream_is_served_as_server_sent_events(server: ServerThread) -> None:
    body = {"model": "m", "messages": user("hi"), "stream": True, "max_tokens": 4}
    resp = httpx.post(server.url + "/v1/chat/completions", json=body, timeout=30)
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/event-stream")
    events = [line for line in resp.text.split("\n\n") if line]
    assert events[-1] == "data: [DONE]"
    assert all(e.startswith("data: ") for e in events)


# ---- tools --------------------------------------------------------------------------


def test_tool_call_is_parsed_and_the_conversation_continues(client: openai.OpenAI) -> None:
    resp = client.chat.completions.create(model="m", messages=user("CALL_TOOL"), tools=TOOLS)
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.type == "function"
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert call.id
    # the agent sends the call and its result back: the server accepts the round trip
    follow = client.chat.completions.create(
        model="m",
        tools=TOOLS,
        messages=[
            *user("CALL_TOOL"),
            choice.message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
        ],
    )
    assert follow.choices[0].message.tool_calls is not None


def test_streamed_tool_call(client: openai.OpenAI) -> None:
    calls, finish = [], None
    for chunk in client.chat.completions.create(
        model="m", messages=user("CALL_TOOL"), tools=TOOLS, stream=True
    ):
        for c in chunk.choices:
            calls += c.delta.tool_calls or []
            finish = c.finish_reason or finish
    assert finish == "tool_calls"
    assert [c.function.name for c in calls] == ["get_weather"]


def test_malformed_tool_call_stays_plain_content(client: openai.OpenAI) -> None:
    resp = client.chat.completions.create(model="m", messages=user("BROKEN_TOOL"), tools=TOOLS)
    choice = resp.choices[0]
    assert choice.message.tool_calls is None
    assert choice.message.content == BROKEN_CALL
    assert choice.finish_reason == "stop"


# ---- completions, models, health ----------------------------------------------------


def test_completions_with_text_and_token_id_prompts(
    client: openai.OpenAI, mock_model: ModelWrapper
) -> None:
    resp = client.completions.create(model="m", prompt="Say hi", max_tokens=5, logprobs=1)
    choice = resp.choices[0]
    assert resp.object == "text_completion"
    assert choice.text == "Sampl"
    assert choice.finish_reason == "length"
    assert choice.model_extra["prompt_token_ids"] == mock_model.tokenizer.encode("Say hi")
    assert len(choice.logprobs.token_logprobs) == 5
    assert choice.logprobs.tokens == list("Sampl")

    ids = mock_model.tokenizer.encode("Say hi")
    by_ids = client.completions.create(model="m", prompt=ids, max_tokens=5)
    assert by_ids.choices[0].model_extra["prompt_token_ids"] == ids
    assert by_ids.choices[0].model_extra["token_ids"] == choice.model_extra["token_ids"]

    two = client.completions.create(model="m", prompt=["a", "b"], n=2, max_tokens=2)
    assert len(two.choices) == 4


def test_models_and_health(client: openai.OpenAI, server: ServerThread) -> None:
    (entry,) = client.models.list().data
    assert entry.id == "mock-policy"
    assert entry.model_extra["max_model_len"] == MAX_LEN
    resp = httpx.get(server.url + "/health", timeout=10)
    assert resp.status_code == 200 and resp.json() == {"status": "ok"}


# ---- errors -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "wizard", "content": "hi"}],
        [{"role": "user", "content": 5}],
        [],
        ["hi"],
    ],
)
def test_malformed_messages_are_bad_requests(client: openai.OpenAI, messages: list) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="m", messages=messages)
    assert info.value.status_code == 400
    assert info.value.param == "messages"


def test_bad_sampling_argument_is_a_bad_request(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="'n' must be"):
        client.chat.completions.create(model="m", messages=user("hi"), extra_body={"n": "two"})


def test_malformed_stream_options_is_a_bad_request(server: ServerThread) -> None:
    body = {"messages": user("hi"), "stream": True, "stream_options": "yes"}
    resp = httpx.post(server.url + "/v1/chat/completions", json=body, timeout=10)
    assert resp.status_code == 400
    assert resp.json()["error"]["param"] == "stream_options"


def test_prompt_over_the_context_length(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="m", messages=user("x" * (MAX_LEN + 10)))
    assert info.value.code == "context_length_exceeded"
    assert str(MAX_LEN) in info.value.message


def test_non_json_body_and_unknown_routes(server: ServerThread) -> None:
    url = server.url
    resp = httpx.post(
        url + "/v1/chat/completions",
        content=b"{not json",
        headers={"content-type": "application/json"},
        timeout=10,
    )
    assert resp.status_code == 400
    assert "not valid JSON" in resp.json()["error"]["message"]
    resp = httpx.post(url + "/v1/chat/completions", json=["a list"], timeout=10)
    assert resp.status_code == 400 and "JSON object" in resp.json()["error"]["message"]
    resp = httpx.get(url + "/v1/embeddings", timeout=10)
    assert resp.status_code == 404 and resp.json()["error"]["message"]
    resp = httpx.get(url + "/v1/chat/completions", timeout=10)
    assert resp.status_code == 405 and "error" in resp.json()


def test_server_answers_like_the_in_process_client(
    client: openai.OpenAI, mock_model: ModelWrapper
) -> None:
    """Same service behind both transports: the bodies agree except for ids and clocks."""
    local = mock_model.get_openai_client()
    kwargs = {"model": "m", "messages": user("hi"), "n": 2, "logprobs": True, "top_logprobs": 1}
    a = client.chat.completions.create(**kwargs).model_dump()
    b = local.chat.completions.create(**kwargs).model_dump()
    for body in (a, b):
        del body["id"], body["created"]
    assert a == b


# ---- bearer token -------------------------------------------------------------------


@pytest.fixture(scope="module")
def keyed_server(mock_model: ModelWrapper) -> Iterator[ServerThread]:
    with ServerThread(create_app(mock_model.openai_service, api_key="s3cret")) as srv:
        yield srv


@pytest.mark.parametrize("key", ["wrong", "s3cret-not", "S3CRET"])
def test_api_key_is_required_on_v1(keyed_server: ServerThread, key: str) -> None:
    bad = openai.OpenAI(base_url=keyed_server.url + "/v1", api_key=key, max_retries=0)
    with pytest.raises(openai.AuthenticationError) as info:
        bad.chat.completions.create(model="m", messages=user("hi"))
    assert info.value.status_code == 401
    assert info.value.code == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError):
        bad.models.list()


def test_requests_without_a_key_are_refused(keyed_server: ServerThread) -> None:
    url = keyed_server.url
    body = {"model": "m", "messages": user("hi")}
    resp = httpx.post(url + "/v1/chat/completions", json=body, timeout=10)
    assert resp.status_code == 401
    assert resp.json()["error"]["code"] == "invalid_api_key"
    assert resp.headers["www-authenticate"] == "Bearer"
    # the key without the scheme is not enough, and unknown /v1 paths do not reveal a 404
    resp = httpx.post(url + "/v1/completions", json=body, headers={"Authorization": "s3cret"})
    assert resp.status_code == 401
    assert httpx.get(url + "/v1/nothing-here", timeout=10).status_code == 401


def test_api_key_lets_the_right_client_in(keyed_server: ServerThread) -> None:
    good = openai.OpenAI(base_url=keyed_server.url + "/v1", api_key="s3cret", max_retries=0)
    resp = good.chat.completions.create(model="m", messages=user("hi"), max_tokens=2)
    assert resp.choices[0].message.content == "Sa"
    assert good.models.list().data[0].id == "mock-policy"
    assert httpx.get(keyed_server.url + "/health", timeout=10).status_code == 200


# ---- the tiny real model ------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_server(tiny_model_path) -> Iterator[tuple[ServerThread, ModelWrapper]]:
    engine = create_engine("hf", str(tiny_model_path), options={"device": "cpu"})
    model = ModelWrapper(engine, model_name="tiny", default_max_tokens=8)
    try:
        with ServerThread(create_app(model.openai_service)) as srv:
            yield srv, model
    finally:
        engine.close()


def test_tiny_model_token_ids_logprobs_and_seed(tiny_server) -> None:
    srv, model = tiny_server
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="x", max_retries=0, timeout=60)
    messages = user("What is 2 + 2?")
    kwargs = {"model": "tiny", "messages": messages, "max_tokens": 8, "logprobs": True}
    a = client.chat.completions.create(**kwargs, seed=1, top_logprobs=3)
    b = client.chat.completions.create(**kwargs, seed=1)
    c = client.chat.completions.create(**kwargs, seed=2, n=2)

    prompt_ids = a.model_extra["prompt_token_ids"]
    assert prompt_ids == model.chat_prompts.render(messages)[1]
    ids = a.choices[0].model_extra["token_ids"]
    assert 0 < len(ids) <= 8
    assert a.choices[0].message.content == model.tokenizer.decode(ids)
    # same seed, same sample; another seed, other samples
    assert b.choices[0].model_extra["token_ids"] == ids
    assert all(ch.model_extra["token_ids"] != ids for ch in c.choices)

    # the returned log-probabilities are the model's: rescoring the ids agrees
    lps = [x.logprob for x in a.choices[0].logprobs.content]
    scored = model.logprobs(prompt_ids + ids).tolist()[-len(ids) :]
    assert lps == pytest.approx(scored, abs=1e-3)
    for entry in a.choices[0].logprobs.content:
        tops = [t.logprob for t in entry.top_logprobs]
        assert len(tops) == 3 and tops == sorted(tops, reverse=True)
        assert entry.logprob <= tops[0] + 1e-4


@pytest.mark.parametrize("bad_id", [-1, 2**40])
def test_tiny_model_token_ids_its_tokenizer_cannot_hold_are_400s(tiny_server, bad_id) -> None:
    # the fast tokenizer overflows on these ids (it used to surface as a 500)
    srv, model = tiny_server
    body = {"model": "tiny", "prompt": [1, bad_id], "max_tokens": 2}
    resp = httpx.post(srv.url + "/v1/completions", json=body, timeout=60)
    assert resp.status_code == 400, resp.text
    error = resp.json()["error"]
    assert error["param"] == "prompt" and str(bad_id) in error["message"]
    assert str(model.engine.vocab_size) in error["message"]


def test_unexpected_errors_become_openai_500s() -> None:
    class BrokenService:
        async def handle_async(self, endpoint: str, body: object) -> None:
            raise RuntimeError("boom")

    app = create_app(BrokenService())  # type: ignore[arg-type]
    with TestClient(app, raise_server_exceptions=False, base_url="http://127.0.0.1") as http:
        resp = http.post("/v1/chat/completions", json={"messages": []})
    assert resp.status_code == 500
    assert resp.json()["error"] == {
        "message": "RuntimeError: boom",
        "type": "internal_error",
        "param": None,
        "code": None,
    }
