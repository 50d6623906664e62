"""Workflows written for older Trinity-RFT declare ``asynchronous`` and ``repeatable``
as properties instead of the ``is_async`` / ``can_repeat`` class flags (its
``customized_toolcall_workflows.py`` does): the explorer must run them as declared."""

from __future__ import annotations

import asyncio
import logging

from reinforge.core import Experience, Task
from reinforge.explorer.messages import OK
from reinforge.explorer.runner import WorkflowRunner
from reinforge.explorer.scheduler import make_requests
from reinforge.models import MockEngine
from reinforge.workflows import Workflow

RAN: list[str] = []


class OldAsyncRepeatable(Workflow):
    """Written the old way: both flags as properties, the work in ``run_async``."""

    @property
    def asynchronous(self) -> bool:
        return True

    @property
    def repeatable(self) -> bool:
        return True

    def run(self) -> list[Experience]:
        raise AssertionError("an asynchronous workflow is awaited, not run")

    async def run_async(self) -> list[Experience]:
        RAN.append("run_async")
        question = self.task.raw_task["q"]
        return await self.model.chat_async(
            [{"role": "user", "content": question}], n=self.repeat_times
        )


class StillSync(OldAsyncRepeatable):
    """A subclass that sets the class flag itself: the flag it sets wins."""

    is_async = False

    def run(self) -> list[Experience]:
        RAN.append("run")
        return self.model.chat([{"role": "user", "content": "hi"}], n=self.repeat_times)


def test_the_properties_become_the_class_flags() -> None:
    assert OldAsyncRepeatable.is_async and OldAsyncRepeatable.can_repeat
    assert not StillSync.is_async and StillSync.can_repeat
    assert not Workflow.is_async and not Workflow.can_repeat


def test_the_explorer_awaits_it_once_for_all_its_repeats() -> None:
    RAN.clear()
    task = Task(workflow=OldAsyncRepeatable, raw_task={"q": "2+2?"}, task_id="t", repeat_times=3)
    (request,) = make_requests([task], taskset="t", timeout=30.0, max_retries=0)
    runner = WorkflowRunner(MockEngine())
    try:
        result = asyncio.run(runner.run(request))
    finally:
        runner.close()
    assert result.status == OK, result.error
    assert RAN == ["run_async"] and len(result.experiences) == 3


def test_a_property_that_needs_the_instance_leaves_the_flag_with_a_warning(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="reinforge.workflows.workflow")

    class NeedsState(Workflow):
        @property
        def asynchronous(self) -> bool:
            return self.mode == "async"  # set in __init__, not there yet

    assert NeedsState.is_async is False
    assert "'asynchronous' could not be read" in caplog.text and "is_async" in caplog.text
