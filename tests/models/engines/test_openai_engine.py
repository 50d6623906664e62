"""The ``openai`` engine against real HTTP servers on loopback.

``reinforge serve``'s app over the tiny hf model is the well-behaved server: the
engine's sampled ids and logprobs must be what the model gives. Small FastAPI apps
stand in for servers that misbehave in ways real ones do (no token ids, 503s,
slow answers).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from reinforge.models import ModelWrapper
from reinforge.models.engine import SamplingParams
from reinforge.models.engines.hf import HFEngine
from reinforge.models.engines.openai import OpenAIEngine, ServerProtocolError
from reinforge.models.engines.openai.client import ServerRequestError, ServerUnavailableError
from reinforge.models.openai_api.server import ServerThread, create_app


@pytest.fixture(scope="module")
def served(tiny_model_path: Path) -> Iterator[tuple[ServerThread, HFEngine]]:
    engine = HFEngine(tiny_model_path, seed=0)
    with ServerThread(create_app(ModelWrapper(engine).openai_service)) as server:
        yield server, engine
    engine.close()


def test_samples_are_token_exact(served, tiny_model_path: Path, tiny_model_and_tokenizer) -> None:
    server, _ = served
    engine = OpenAIEngine(server.url, model="tiny", tokenizer_path=tiny_model_path)
    try:
        prompt = engine.tokenizer.encode("What is 2 + 2?")
        outs = engine.generate(prompt, SamplingParams(n=3, max_tokens=12, temperature=1.0))
        assert len(outs) == 3
        model, _ = tiny_model_and_tokenizer
        for out in outs:
            ids = prompt + out.token_ids
            with torch.no_grad():
                logits = model(torch.tensor([ids])).logits[0].float()
            ref = torch.log_softmax(logits, -1)[len(prompt) - 1 : -1]
            ref = ref.gather(1, torch.tensor(out.token_ids)[:, None])[:, 0]
            assert torch.allclose(ref, torch.tensor(out.logprobs), atol=1e-4)
        # the ModelWrapper on top builds experiences from those ids unchanged
        exp = ModelWrapper(engine).chat([{"role": "user", "content": "hi"}], max_tokens=6)[0]
        assert exp.tokens[exp.prompt_length :].tolist() == exp.response_tokens.tolist()
        assert len(exp.logprobs) == exp.response_length > 0
    finally:
        engine.close()


def test_scoring_needs_prompt_logprobs(served, tiny_model_path: Path) -> None:
    server, _ = served
    engine = OpenAIEngine(server.url, model="tiny", tokenizer_path=tiny_model_path)
    try:
        with pytest.raises(ServerProtocolError, match="prompt_logprobs"):
            engine.score([1, 2, 3])
    finally:
        engine.close()


def app_answering(handler) -> FastAPI:
    app = FastAPI()
    app.post("/v1/completions")(handler)
    return app


def good_body(n: int = 1) -> dict:
    return {
        "choices": [
            {
                "index": i,
                "token_ids": [5],
                "finish_reason": "stop",
                "logprobs": {"token_logprobs": [-1.0]},
            }
            for i in range(n)
        ]
    }


def test_a_server_without_token_ids_is_refused_at_start(tiny_model_path: Path) -> None:
    async def handler(request: Request) -> dict:
        return {"choices": [{"index": 0, "text": "x", "finish_reason": "stop", "logprobs": None}]}

    with (
        ServerThread(app_answering(handler)) as server,
        pytest.raises(ServerProtocolError, match=rf"{server.url}.*'token_ids'"),
    ):
        OpenAIEngine(server.url, model="m", tokenizer_path=tiny_model_path)


def test_unavailable_answers_are_retried_and_client_errors_are_not(tiny_model_path: Path) -> None:
    calls = {"n": 0}

    async def handler(request: Request):
        calls["n"] += 1
        body = await request.json()
        if body["max_tokens"] == 99:
            return JSONResponse({"error": {"message": "max_tokens too large"}}, status_code=400)
        if calls["n"] % 2 == 0:
            return JSONResponse({"error": {"message": "busy"}}, status_code=503)
        return good_body(body["n"])

    with ServerThread(app_answering(handler)) as server:
        engine = OpenAIEngine(server.url, model="m", tokenizer_path=tiny_model_path, check=False)
        engine.http.backoff = 0.01
        try:
            before = calls["n"]
            assert engine.generate([1], SamplingParams())[0].token_ids == [5]
            assert engine.generate([1], SamplingParams())[0].token_ids == [5]
            assert calls["n"] - before == 3  # one 503 retried
            before = calls["n"]
            with pytest.raises(ServerRequestError, match="400: max_tokens too large"):
                engine.generate([1], SamplingParams(max_tokens=99))
            assert calls["n"] - before == 1
        finally:
            engine.close()


def test_dead_server_gives_up_with_the_url(tiny_model_path: Path) -> None:
    engine = OpenAIEngine(
        "http://127.0.0.1:9", model="m", tokenizer_path=tiny_model_path, check=False, max_retries=1
    )
    engine.http.backoff = 0.01
    try:
        with pytest.raises(ServerUnavailableError, match=r"127\.0\.0\.1:9"):
            engine.generate([1], SamplingParams())
    finally:
        engine.close()


def test_cancelling_a_request_closes_it_on_the_server(tiny_model_path: Path) -> None:
    started, disconnected = threading.Event(), threading.Event()

    async def handler(request: Request) -> dict:
        started.set()
        for _ in range(200):
            if await request.is_disconnected():
                disconnected.set()
                break
            await asyncio.sleep(0.05)
        return good_body()

    with ServerThread(app_answering(handler)) as server:
        engine = OpenAIEngine(server.url, model="m", tokenizer_path=tiny_model_path, check=False)
        try:
            future = engine.submit([1], SamplingParams())
            assert started.wait(10)
            assert future.cancel()
            assert disconnected.wait(10), "the server never saw the client go away"
        finally:
            engine.close()


def test_requests_spread_over_replicas(tiny_model_path: Path) -> None:
    hits = {"a": 0, "b": 0}

    def replica(name: str) -> FastAPI:
        async def handler(request: Request) -> dict:
            hits[name] += 1
            await asyncio.sleep(0.2)
            return good_body()

        return app_answering(handler)

    with ServerThread(replica("a")) as a, ServerThread(replica("b")) as b:
        engine = OpenAIEngine(
            [a.url, b.url], model="m", tokenizer_path=tiny_model_path, check=False
        )
        try:
            futures = [engine.submit([1], SamplingParams()) for _ in range(8)]
            for f in futures:
                f.result(30)
            assert hits["a"] >= 2 and hits["b"] >= 2
        finally:
            engine.close()
