"""The recording endpoint, driven over TCP by the official ``openai`` SDK as a black-box
agent would: calls made with a task's key land in that task's wrapper history, token
for token; a key whose task ended (or was never issued) gets a 401."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import openai
import pytest

from reinforge.models import ModelWrapper
from reinforge.models.engines.mock import MockEngine


def reply(prompt: str, index: int) -> str:
    return "It is 42." if "again" not in prompt else "Still 42."


def wrapper() -> ModelWrapper:
    engine = MockEngine(replies=reply, max_model_len=2048)
    return ModelWrapper(engine, model_name="mock-policy", enable_history=True)


def test_calls_with_a_key_are_recorded_by_the_wrapper_that_opened_it() -> None:
    first, second = wrapper(), wrapper()
    with first.agent_endpoint("task 3 run 0") as a, second.agent_endpoint("task 4") as b:
        assert a.api_key.startswith("reinforge-task-3-run-0-") and a.api_key != b.api_key
        assert a.base_url == b.base_url and a.base_url.endswith("/v1")
        client = openai.OpenAI(base_url=a.base_url, api_key=a.api_key, max_retries=0)
        messages = [{"role": "user", "content": "What is 6 x 7?"}]
        answer = client.chat.completions.create(model=a.model, messages=messages)
        messages += [answer.choices[0].message.model_dump(exclude_none=True)]
        messages += [{"role": "user", "content": "Say it again."}]
        client.chat.completions.create(model=a.model, messages=messages)
        assert [m.id for m in client.models.list().data] == ["mock-policy"]
    assert second.extract_experience_from_history() == []
    (conversation,) = first.extract_experience_from_history(shape="conversation")
    text = first.tokenizer.decode(conversation.tokens.tolist())
    assert "It is 42." in text and "Still 42." in text
    response = conversation.tokens[conversation.prompt_length :].tolist()
    mask = conversation.action_mask.tolist()  # over the response: sampled tokens only
    sampled = first.tokenizer.decode([t for t, m in zip(response, mask, strict=True) if m])
    assert "It is 42." in sampled and "Still 42." in sampled and "again" not in sampled


def test_a_key_stops_working_when_its_block_ends() -> None:
    model = wrapper()
    with model.agent_endpoint("done") as endpoint:
        pass
    client = openai.OpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key, max_retries=0)
    with pytest.raises(openai.AuthenticationError, match="names no running task"):
        client.chat.completions.create(
            model=endpoint.model, messages=[{"role": "user", "content": "hi"}]
        )
    stranger = openai.OpenAI(base_url=endpoint.base_url, api_key="made-up", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        stranger.models.list()
    assert model.extract_experience_from_history() == []


def test_an_agent_in_a_subprocess_reads_the_endpoint_from_its_environment() -> None:
    """Plain SDK code with no arguments: ``openai.OpenAI()`` picks up the base URL
    and key from the environment the endpoint hands over."""
    agent = textwrap.dedent(
        """
        import os, openai
        client = openai.OpenAI()
        out = client.chat.completions.create(
            model=os.environ["OPENAI_MODEL"],
            messages=[{"role": "user", "content": "What is 6 x 7?"}],
        )
        print(out.choices[0].message.content)
        """
    )
    model = wrapper()
    with model.agent_endpoint("subprocess") as endpoint:
        done = subprocess.run(
            [sys.executable, "-c", agent],
            env={**os.environ, **endpoint.env()},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "It is 42."
    (turn,) = model.extract_experience_from_history()
    assert "It is 42." in model.tokenizer.decode(turn.tokens[turn.prompt_length :].tolist())


def test_the_session_url_names_the_endpoint_whatever_key_the_agent_sends() -> None:
    model = wrapper()
    with model.agent_endpoint("flow") as endpoint:
        assert endpoint.session_url.endswith(f"/sessions/{endpoint.api_key}/v1")
        client = openai.OpenAI(base_url=endpoint.session_url, api_key="EMPTY", max_retries=0)
        answer = client.chat.completions.create(
            model=endpoint.model, messages=[{"role": "user", "content": "What is 6 x 7?"}]
        )
        assert answer.choices[0].message.content == "It is 42."
    (recorded,) = model.extract_experience_from_history()
    assert "It is 42." in model.tokenizer.decode(recorded.tokens.tolist())
    with pytest.raises(openai.AuthenticationError):  # closed: the path's key is gone
        client.chat.completions.create(
            model=endpoint.model, messages=[{"role": "user", "content": "hi"}]
        )
