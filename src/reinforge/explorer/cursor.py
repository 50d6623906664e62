"""Position in the training taskset: which epoch, which offset, which explore step.

The cursor is plain data so that it can be stored with the experiences of each
step (in the same buffer transaction); a restarted run resumes right after the
last step whose experiences were stored, skipping no task and repeating none. A
``scheduler`` (the taskset's ``data_selector``) picks which tasks fill each batch; its
state travels in the same stored dict, so a resumed run continues its schedule.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class TasksetCursor:
    num_tasks: int
    batch_size: int
    total_epochs: int = 1
    total_steps: int | None = None
    epoch: int = 0
    offset: int = 0
    step: int = 0
    #: a ``reinforge.buffer.task_scheduler.TaskScheduler``, or None: tasks in order
    scheduler: Any = field(default=None, compare=False, repr=False)

    def next_batch(self) -> tuple[int, int, int] | None:
        """Advance; return (step, start, end) of the next batch, or None when done."""
        if self.num_tasks == 0 or (self.total_steps is not None and self.step >= self.total_steps):
            return None
        if self.offset >= self.num_tasks:
            self.epoch += 1
            self.offset = 0
        if self.epoch >= self.total_epochs:
            return None
        start = self.offset
        end = min(start + self.batch_size, self.num_tasks)
        self.offset = end
        self.step += 1
        return self.step, start, end

    def extend_batch(self) -> tuple[int, int] | None:
        """(start, end) of ``batch_size`` more tasks for the current step (dynamic
        sampling), or None when the epoch has none left: a step never takes a task
        twice, so a group id (step/task) stays one task's rollouts."""
        if self.step == 0 or self.offset >= self.num_tasks:
            return None
        start = self.offset
        self.offset = min(start + self.batch_size, self.num_tasks)
        return start, self.offset

    @property
    def total(self) -> int:
        """Number of steps the whole run will take (at most: a step that explores more
        batches under dynamic sampling uses up the taskset sooner)."""
        per_epoch = -(-self.num_tasks // self.batch_size) if self.num_tasks else 0
        steps = per_epoch * self.total_epochs
        return min(steps, self.total_steps) if self.total_steps is not None else steps

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = {"epoch": self.epoch, "offset": self.offset, "step": self.step}
        if self.scheduler is not None:
            state["scheduler"] = self.scheduler.state_dict()
        return state

    def restore(self, state: dict[str, Any]) -> None:
        self.epoch, self.offset, self.step = (
            int(state["epoch"]),
            int(state["offset"]),
            int(state["step"]),
        )
        if self.scheduler is not None and "scheduler" in state:
            self.scheduler.load_state_dict(state["scheduler"])

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "scheduler"}
