"""The hf engine under bad input and faults: nothing hangs, nothing else fails with it,
abandoned requests stop costing decode steps (issue: trust the run, 1 and 2)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from reinforge.core import Experience, Task
from reinforge.explorer.messages import TIMEOUT, TaskRequest
from reinforge.explorer.runner import WorkflowRunner
from reinforge.models import ModelWrapper
from reinforge.models.engine import SamplingParams
from reinforge.models.engines.hf import HFEngine
from reinforge.models.openai_api.server import ServerThread, create_app
from reinforge.workflows import WORKFLOWS, Workflow

LONG = SamplingParams(max_tokens=1500, temperature=1.0, stop_token_ids=[])


@pytest.fixture
def engine(tiny_model_path: Path) -> Iterator[HFEngine]:
    eng = HFEngine(tiny_model_path, seed=0)
    eng._eos = frozenset()  # the random tiny model must not stop early in these tests
    yield eng
    eng.close()


def wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


@pytest.mark.parametrize("bad", [[50000], [-1], [1, 2, 10**9], [1, "a"]])
def test_ids_outside_the_vocabulary_are_refused_alone(engine: HFEngine, bad: list) -> None:
    good = engine.submit([1, 2, 3], SamplingParams(max_tokens=3))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        engine.submit(bad, SamplingParams(max_tokens=3)).result(5)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        engine.submit_score(bad).result(5)
    assert len(good.result(30)[0].token_ids) == 3


def test_out_of_vocabulary_prompt_is_a_400_and_the_server_goes_on(engine: HFEngine) -> None:
    with (
        ServerThread(create_app(ModelWrapper(engine).openai_service)) as server,
        httpx.Client(base_url=server.url, timeout=30) as http,
    ):
        bad = http.post("/v1/completions", json={"model": "m", "prompt": [50000]})
        assert bad.status_code == 400 and "outside the vocabulary" in bad.text
        ok = http.post("/v1/completions", json={"model": "m", "prompt": [1, 2], "max_tokens": 2})
        assert ok.status_code == 200


def test_a_failed_prefill_fails_its_requests_and_the_engine_goes_on(
    engine: HFEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    forward = engine.model.forward
    calls = {"n": 0}

    def broken_once(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("injected fault")
        return forward(*args, **kwargs)

    monkeypatch.setattr(engine.model, "forward", broken_once)
    with pytest.raises(RuntimeError, match="injected fault"):
        engine.submit([1, 2, 3], SamplingParams(max_tokens=3)).result(30)
    assert len(engine.submit([1, 2, 3], SamplingParams(max_tokens=3)).result(30)[0].token_ids) == 3


def test_a_failed_decode_step_fails_the_batch_and_the_engine_goes_on(
    engine: HFEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    running = engine.submit([1, 2, 3], LONG)
    wait_for(lambda: engine.stats["decode_steps"] > 2)
    forward = engine.model.forward
    state = {"failed": False}

    def broken_once(*args, **kwargs):
        if not state["failed"]:
            state["failed"] = True
            raise RuntimeError("injected decode fault")
        return forward(*args, **kwargs)

    monkeypatch.setattr(engine.model, "forward", broken_once)
    with pytest.raises(RuntimeError, match="injected decode fault"):
        running.result(30)
    assert len(engine.submit([1, 2], SamplingParams(max_tokens=2)).result(30)[0].token_ids) == 2
    start = time.monotonic()
    engine.close()
    assert time.monotonic() - start < 10


def test_a_cancelled_request_stops_being_decoded(engine: HFEngine) -> None:
    fut = engine.submit([1, 2, 3], LONG)
    wait_for(lambda: engine.stats["decode_steps"] > 2)
    assert fut.cancel()
    wait_for(lambda: engine.stats["cancelled_rows"] == 1 and not engine._rows)
    steps = engine.stats["decode_steps"]
    assert steps < 1500
    assert len(engine.submit([1, 2], SamplingParams(max_tokens=2)).result(30)[0].token_ids) == 2
    assert engine._thread.is_alive()


@WORKFLOWS.register_module("test_samples_too_long", force=True)
class SamplesTooLong(Workflow):
    def run(self) -> list[Experience]:
        return self.model.chat([{"role": "user", "content": "go"}], max_tokens=1500)


@WORKFLOWS.register_module("test_async_samples_too_long", force=True)
class AsyncSamplesTooLong(Workflow):
    is_async = True

    async def run_async(self) -> list[Experience]:
        return await self.model.chat_async([{"role": "user", "content": "go"}], max_tokens=1500)


@pytest.mark.parametrize("workflow", ["test_samples_too_long", "test_async_samples_too_long"])
def test_a_timed_out_task_cancels_its_engine_requests(engine: HFEngine, workflow: str) -> None:
    runner = WorkflowRunner(engine)
    task = Task(workflow=workflow, raw_task={}, task_id="t")
    request = TaskRequest(task, 1, 0, 0.5, 0)
    try:
        result = asyncio.run(runner.run(request))
    finally:
        runner.close()
    assert result.status == TIMEOUT
    wait_for(lambda: engine.stats["cancelled_rows"] >= 1 and not engine._rows)


def test_a_score_cancelled_during_its_forward_does_not_kill_the_engine(
    engine: HFEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    forward = engine.model.forward
    held: list = []

    def cancel_while_running(*args, **kwargs):
        if held and not held[0].done():
            held[0].cancel()  # the caller gives up while the engine is scoring
        return forward(*args, **kwargs)

    monkeypatch.setattr(engine.model, "forward", cancel_while_running)
    gate = engine.submit([1, 2, 3], LONG)  # keeps the worker busy while the score is queued
    wait_for(lambda: engine.stats["decode_steps"] > 1)
    held.append(engine.submit_score([1, 2, 3, 4]))
    wait_for(lambda: held[0].cancelled())
    gate.cancel()
    assert len(engine.submit([1, 2], SamplingParams(max_tokens=2)).result(30)[0].token_ids) == 2
    assert engine._thread.is_alive()


def test_a_failure_while_joining_the_batch_fails_every_row_and_the_engine_goes_on(
    engine: HFEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    running = engine.submit([1, 2, 3], LONG)
    wait_for(lambda: engine.stats["decode_steps"] > 1)
    merge = engine._merge
    state = {"failed": False}

    def broken_once(*args, **kwargs):
        if not state["failed"]:
            state["failed"] = True
            raise RuntimeError("injected merge fault")
        return merge(*args, **kwargs)

    monkeypatch.setattr(engine, "_merge", broken_once)
    joining = engine.submit([4, 5], LONG)
    for fut in (joining, running):
        with pytest.raises(RuntimeError, match="injected merge fault"):
            fut.result(30)
    assert len(engine.submit([1, 2], SamplingParams(max_tokens=2)).result(30)[0].token_ids) == 2


def test_a_client_that_disconnects_cancels_its_engine_request(engine: HFEngine) -> None:
    with ServerThread(create_app(ModelWrapper(engine).openai_service)) as server:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(
                server.url + "/v1/completions",
                json={"model": "m", "prompt": [1, 2, 3], "max_tokens": 1500},
                timeout=httpx.Timeout(30, read=0.5),
            )
        wait_for(lambda: engine.stats["cancelled_rows"] >= 1 and not engine._rows)
        with httpx.Client(base_url=server.url, timeout=30) as http:
            ok = http.post(
                "/v1/completions", json={"model": "m", "prompt": [1, 2], "max_tokens": 2}
            )
        assert ok.status_code == 200
    assert engine._thread.is_alive()
