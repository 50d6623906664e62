"""An abandoned task's engine requests are cancelled, so the engine stops decoding for
it (issue: trust the run, 2): on timeout (sync and async workflows) and when the
explorer itself is cancelled (Ctrl-C)."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import Future
from typing import Any

import pytest

from reinforge.core import Task
from reinforge.explorer import Scheduler, WorkflowRunner, make_requests
from reinforge.explorer.messages import TIMEOUT
from reinforge.models import MockEngine
from reinforge.workflows import WORKFLOWS, Workflow


class HeldEngine(MockEngine):
    """Requests stay in flight until cancelled (a generation that never ends in time);
    every future handed out is kept so the test can look at it."""

    def __init__(self) -> None:
        super().__init__(policy="arithmetic")
        self.futures: list[Future] = []

    def submit(self, prompt_ids: list[int], params: Any) -> Future:
        self.futures.append(Future())
        return self.futures[-1]


@WORKFLOWS.register_module("test_long_generation", force=True)
class LongGeneration(Workflow):
    def run(self):
        return self.model.chat([{"role": "user", "content": "write a novel"}])


@WORKFLOWS.register_module("test_long_generation_in_a_thread", force=True)
class LongGenerationInAThread(Workflow):
    """Async, but the blocking call runs on a thread: cancelling the coroutine alone
    would leave that thread's request running."""

    is_async = True

    async def run_async(self):
        return await asyncio.to_thread(
            self.model.chat, [{"role": "user", "content": "write a novel"}]
        )


def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def run(engine: HeldEngine, workflow: str, timeout: float, retries: int = 0):
    tasks = [Task(workflow=workflow, raw_task={}, task_id=0)]
    requests = make_requests(tasks, taskset="t", timeout=timeout, max_retries=retries)
    scheduler = Scheduler([WorkflowRunner(engine)])
    try:
        return asyncio.run(scheduler.run(requests))
    finally:
        scheduler.close()


@pytest.mark.parametrize("workflow", ["test_long_generation", "test_long_generation_in_a_thread"])
def test_a_timed_out_task_cancels_its_engine_requests(workflow: str) -> None:
    engine = HeldEngine()
    [result] = run(engine, workflow, timeout=0.3, retries=1)
    assert result.status == TIMEOUT and result.attempts == 2
    wait_for(lambda: len(engine.futures) == 2)  # one request per attempt
    assert all(fut.cancelled() for fut in engine.futures)


def test_cancelling_the_explorer_cancels_the_requests_in_flight() -> None:
    engine = HeldEngine()
    runner = WorkflowRunner(engine)
    tasks = [Task(workflow="test_long_generation", raw_task={}, task_id=0)]
    requests = make_requests(tasks, taskset="t", timeout=60.0, max_retries=0)
    scheduler = Scheduler([runner])

    async def interrupted() -> None:
        job = asyncio.ensure_future(scheduler.run(requests))
        while not engine.futures:
            await asyncio.sleep(0.01)
        job.cancel()  # what Ctrl-C does to the explore step in flight
        with pytest.raises(asyncio.CancelledError):
            await job

    try:
        asyncio.run(interrupted())
    finally:
        scheduler.close()
    assert engine.futures[0].cancelled()
