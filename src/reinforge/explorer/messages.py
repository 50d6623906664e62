"""What crosses the boundary between the scheduler and the workflow runners.

A request carries its Task as an object: in this process a runner gives each
attempt its own copy (``Task.for_run``), so nothing a workflow changes reaches the
next attempt. A result carries Experiences and a status. The Ray backend sends a
request to its actors as plain data (``ray_backend``), so runners can live in other
processes or on other machines without changing workflows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reinforge.core import Experience, Task

OK, FAILED, TIMEOUT, INVALID = "ok", "failed", "timeout", "invalid"
#: a task that ran but whose every experience was masked (e.g. its judge failed)
MASKED = "masked"


@dataclass
class TaskRequest:
    """One call of a task's workflow: ``repeat_times`` rollouts numbered from ``run_id_base``
    (all of the task's for a ``can_repeat`` workflow, else one)."""

    task: Task
    repeat_times: int
    run_id_base: int
    timeout: float
    max_retries: int
    taskset: str = "taskset"


@dataclass
class TaskResult:
    taskset: str
    batch_id: str
    task_id: str
    status: str
    experiences: list[Experience] = field(default_factory=list)
    error: str | None = None
    attempts: int = 1
    elapsed: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == OK
