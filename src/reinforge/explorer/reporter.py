"""How the explorer tells the outside world what happens (the monitor implements it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reinforge.explorer.messages import TaskResult


class Reporter:
    """No-op base; ``reinforge.monitor`` provides console/JSONL implementations.

    The explorer calls ``start``/``task_done``/``step_done``/``finish`` around each
    explore step and eval pass; the run loop adds ``plan`` (how many steps the run
    takes), ``phase`` (training, syncing, ...) and ``samples`` (a few completions).
    """

    def start(self, description: str, total_tasks: int) -> None:
        """A phase begins (explore or eval) with this many task requests in total.

        ``description`` is ``"step N (epoch E)"`` for an explore step and
        ``"eval NAME"`` for an eval pass over the taskset NAME.
        """

    def task_done(self, result: TaskResult) -> None:
        """One task request finished (successfully or not)."""

    def step_done(self, metrics: dict[str, Any]) -> None:
        """An explore step, a training step or an eval pass finished with these metrics."""

    def warn(self, message: str) -> None:
        """Something the user should see, e.g. a failed task."""

    def info(self, message: str) -> None:
        """Something worth a line that is not a problem, e.g. that a run resumes."""

    def plan(self, total_steps: int | None, done: int = 0) -> None:
        """The run takes ``total_steps`` steps (None: unknown); ``done`` of them were
        finished by an earlier invocation (a resumed run), so they count as progress
        but not towards this invocation's speed."""

    def phase(self, label: str, done: int | None = None, total: int | None = None) -> None:
        """The run moved on to work that is neither exploring nor evaluating, e.g.
        ``"training step 3"`` or ``"syncing weights"``; ``done``/``total`` count its
        parts (micro-batches) when they are known."""

    def samples(self, step: int, experiences: Sequence[Any]) -> None:
        """The experiences of an explore step, to show a few of them (e.g. TensorBoard text)."""

    def rewind(self, explore_step: int, train_step: int) -> None:
        """A run resumes: forget metrics of steps it will log again (explore steps after
        ``explore_step``, train steps after ``train_step``)."""

    def finish(self) -> None:
        """The phase is over."""
