"""What crosses the boundary between the scheduler and the workflow runners.

Only plain data: a request carries a Task as a dict, a result carries Experiences
(serialisable) and a status. Nothing is shared by reference, so runners can live in
other processes or on other machines (the Ray backend) without changing workflows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reinforge.core import Experience

OK, FAILED, TIMEOUT, INVALID = "ok", "failed", "timeout", "invalid"
#: a task that ran but whose every experience was masked (e.g. its judge failed)
MASKED = "masked"


@dataclass
class TaskRequest:
    task: dict[str, Any]
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
