"""Every experience is dated with the weight version that sampled it, on every path.

``trainer.max_staleness`` and the staleness metrics count versions from
``info["model_version"]``, so a reply sampled before a sync landed must keep the old
version even when the engine is at the new one by the time the experience is built.
Each test moves the engine's version between sampling and building (as a sync on
another thread does) and checks the experience keeps the sampling one: the mock
engine, the hf engine (a sync waits for running rows), the ``openai`` engine against
a server that dates its replies (``reinforge serve``) and one that does not (vLLM),
and the recording endpoint a black-box agent calls over HTTP.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from fastapi import FastAPI, Request

from reinforge.models import ModelWrapper
from reinforge.models.engine import SamplingParams
from reinforge.models.engines.hf import HFEngine
from reinforge.models.engines.mock import MockEngine
from reinforge.models.engines.openai import OpenAIEngine
from reinforge.models.openai_api.server import ServerThread, create_app

MESSAGES = [{"role": "user", "content": "What is 6 x 7?"}]


class SyncAfterEachRequest(MockEngine):
    """The mock engine with a weight sync landing right after each request is sampled
    (before the caller builds its experience)."""

    def submit(self, prompt_ids: list[int], params: SamplingParams) -> Any:
        future = super().submit(prompt_ids, params)
        self.update_weights({}, version=self.model_version + 1)
        return future


def test_mock_engine_replies_keep_the_version_that_sampled_them() -> None:
    model = ModelWrapper(SyncAfterEachRequest(replies="It is 42."), enable_history=True)
    model.engine.update_weights({}, version=5)
    (first,) = model.chat(MESSAGES)
    (second,) = model.chat(MESSAGES)
    assert (first.info["model_version"], second.info["model_version"]) == (5, 6)
    assert model.model_version == 7  # the engine moved on; the experiences did not


@pytest.fixture(scope="module")
def hf_engine(tiny_model_path: Path) -> Iterator[HFEngine]:
    engine = HFEngine(tiny_model_path, seed=0, batch_window_ms=0.0)
    yield engine
    engine.close()


def test_hf_rows_running_when_a_sync_comes_keep_the_old_version(hf_engine: HFEngine) -> None:
    start = hf_engine.model_version
    params = SamplingParams(max_tokens=48, temperature=1.0, seed=3)
    running = hf_engine.submit(hf_engine.tokenizer.encode("Count to fifty:"), params)
    deadline = time.monotonic() + 30
    while hf_engine.stats["generated_tokens"] == 0 and time.monotonic() < deadline:
        time.sleep(0.005)  # the row is decoding
    sync = threading.Thread(target=hf_engine.update_weights, args=({}, start + 4))
    sync.start()
    (old,) = running.result(timeout=60)
    sync.join(timeout=60)
    assert hf_engine.model_version == start + 4
    assert old.model_version == start  # sampled on the weights before the sync
    (new,) = hf_engine.generate(hf_engine.tokenizer.encode("Hi"), SamplingParams(max_tokens=2))
    assert new.model_version == start + 4


def test_openai_engine_takes_the_version_reinforge_serve_reports(
    tiny_model_path: Path,
) -> None:
    served = SyncAfterEachRequest(replies="It is 42.", tokenizer=None)
    served.update_weights({}, version=3)
    with ServerThread(create_app(ModelWrapper(served).openai_service)) as server:
        engine = OpenAIEngine(server.url, model="mock", tokenizer_path=tiny_model_path, check=False)
        try:
            (comp,) = engine.generate([1, 2, 3], SamplingParams(max_tokens=4))
        finally:
            engine.close()
    assert comp.model_version == 3  # the server's weights, not the client's own 0


def test_openai_engine_dates_an_undated_reply_by_the_version_it_was_sent_to(
    tiny_model_path: Path,
) -> None:
    answer = threading.Event()

    async def vllm_like(request: Request) -> dict:  # vLLM: no model_version in the body
        while not answer.is_set():
            await asyncio.sleep(0.01)
        return {
            "choices": [
                {
                    "index": 0,
                    "token_ids": [5],
                    "finish_reason": "stop",
                    "logprobs": {"token_logprobs": [-1.0]},
                }
            ]
        }

    app = FastAPI()
    app.post("/v1/completions")(vllm_like)
    with ServerThread(app) as server:
        engine = OpenAIEngine(server.url, model="m", tokenizer_path=tiny_model_path, check=False)
        try:
            engine._model_version = 1  # what the vLLM engine and Ray runners set on a sync
            pending = engine.submit([1], SamplingParams())
            engine._model_version = 2  # a sync lands while the request runs
            answer.set()
            (comp,) = pending.result(timeout=30)
        finally:
            engine.close()
    assert comp.model_version == 1  # the oldest weights that made any of its tokens


def test_the_recording_endpoint_dates_what_it_records_and_answers() -> None:
    model = ModelWrapper(
        SyncAfterEachRequest(replies="It is 42."), model_name="mock", enable_history=True
    )
    model.engine.update_weights({}, version=9)
    with model.agent_endpoint("versions") as endpoint:
        client = openai.OpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key, max_retries=0)
        reply = client.chat.completions.create(model=endpoint.model, messages=MESSAGES)
    assert reply.choices[0].model_extra["model_version"] == 9
    (recorded,) = model.extract_experience_from_history()
    assert recorded.info["model_version"] == 9
    assert model.model_version == 10


def test_a_conversation_of_turns_is_dated_by_its_oldest_turn() -> None:
    model = ModelWrapper(SyncAfterEachRequest(replies="It is 42."), enable_history=True)
    model.engine.update_weights({}, version=5)
    messages = list(MESSAGES)
    (first,) = model.chat(messages)
    messages += [first.messages[-1], {"role": "user", "content": "Say it again."}]
    (second,) = model.chat(messages)
    assert (first.info["model_version"], second.info["model_version"]) == (5, 6)
    (conversation,) = model.extract_experience_from_history(shape="conversation")
    assert conversation.info["model_version"] == 5  # the oldest weights in it
