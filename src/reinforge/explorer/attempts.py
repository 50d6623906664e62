"""One task request on its way to exactly one TaskResult: its attempts so far.

A request is tried once, then retried up to ``max_retries`` times after a failure
or a timeout. Its attempts may start on a runner's thread and go on on the event
loop (see ``WorkflowRunner``); this record travels with it, so the count, the time
since its first attempt and the reason of the last failure are kept in one place.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field

from reinforge.core import Experience
from reinforge.explorer.messages import FAILED, OK, TIMEOUT, TaskRequest, TaskResult


@dataclass(eq=False)
class Attempts:
    """The attempts of ``request`` (``index``: its position in the scheduler's list)."""

    index: int
    request: TaskRequest
    start: float = field(default_factory=time.monotonic)
    made: int = 0
    status: str = FAILED
    error: str | None = None

    @property
    def more(self) -> bool:
        """Whether another attempt is allowed: the first one, then ``max_retries`` more."""
        return self.made <= self.request.max_retries

    def timed_out(self) -> None:
        """The attempt in progress overran ``request.timeout``."""
        self.status, self.error = TIMEOUT, timeout_message(self.request)

    def failed(self, exc: Exception) -> None:
        """The attempt in progress raised ``exc`` (a TimeoutError counts as a timeout)."""
        if isinstance(exc, TimeoutError):
            self.timed_out()
        else:
            self.status, self.error = FAILED, failure_message(self.request, exc)

    def result(self, experiences: list[Experience] | None = None) -> TaskResult:
        """The request's result: a success with ``experiences``, else the last failure."""
        if experiences is None:
            status, error, experiences = self.status, self.error, []
        else:
            status, error = OK, None
        request = self.request
        return TaskResult(
            request.taskset,
            str(request.task.batch_id),
            str(request.task.task_id),
            status,
            experiences,
            error,
            self.made,
            time.monotonic() - self.start,
        )


def timeout_message(request: TaskRequest) -> str:
    task_id = request.task.task_id
    return f"task {task_id} of taskset '{request.taskset}' timed out after {request.timeout:g}s"


def failure_message(request: TaskRequest, exc: Exception) -> str:
    task_id = request.task.task_id
    return (
        f"task {task_id} of taskset '{request.taskset}' failed: {type(exc).__name__}: {exc}\n"
        + "".join(traceback.format_exception(exc)[-6:])
    )
