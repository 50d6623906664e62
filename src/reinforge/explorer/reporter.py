"""How the explorer tells the outside world what happens (the monitor implements it)."""

from __future__ import annotations

from typing import Any

from reinforge.explorer.messages import TaskResult


class Reporter:
    """No-op base; ``reinforge.monitor`` provides console/JSONL implementations."""

    def start(self, description: str, total_tasks: int) -> None:
        """A phase begins (explore or eval) with this many task requests in total."""

    def task_done(self, result: TaskResult) -> None:
        """One task request finished (successfully or not)."""

    def step_done(self, metrics: dict[str, Any]) -> None:
        """An explore step or an eval pass finished with these metrics."""

    def warn(self, message: str) -> None:
        """Something the user should see, e.g. a failed task."""

    def info(self, message: str) -> None:
        """Something worth a line that is not a problem, e.g. that a run resumes."""

    def rewind(self, explore_step: int, train_step: int) -> None:
        """A run resumes: forget metrics of steps it will log again (explore steps after
        ``explore_step``, train steps after ``train_step``)."""

    def finish(self) -> None:
        """The phase is over."""
