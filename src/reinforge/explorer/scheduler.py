"""The scheduler hands TaskRequests to runners (up to ``concurrency`` at once) and collects results."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from reinforge.core import Task
from reinforge.explorer.messages import TaskRequest, TaskResult
from reinforge.explorer.runner import WorkflowRunner


def make_requests(
    tasks: Sequence[Task], *, taskset: str, timeout: float, max_retries: int
) -> list[TaskRequest]:
    """Expand tasks into requests: one per task for ``can_repeat`` workflows, else one per repeat."""
    requests = []
    for task in tasks:
        repeat = task.repeat_times or 1
        data = task.to_dict()
        if task.workflow_cls.can_repeat:
            requests.append(TaskRequest(data, repeat, 0, timeout, max_retries, taskset))
        else:
            requests.extend(
                TaskRequest(data, 1, run, timeout, max_retries, taskset) for run in range(repeat)
            )
    return requests


class Scheduler:
    """Local asyncio backend: runners are objects in this process, fed from one queue."""

    def __init__(self, runners: list[WorkflowRunner]) -> None:
        if not runners:
            raise ValueError("scheduler needs at least one runner")
        self.runners = runners

    async def run(
        self, requests: list[TaskRequest], on_result: Callable[[TaskResult], None] | None = None
    ) -> list[TaskResult]:
        """Run all requests; results come back in request order."""
        # One iterator shared by the runner loops: ``next`` is synchronous, so each
        # request goes to exactly one runner without a queue's bookkeeping.
        pending = iter(enumerate(requests))
        results: list[TaskResult | None] = [None] * len(requests)

        async def worker(runner: WorkflowRunner) -> None:
            for index, request in pending:
                result = await runner.run(request)
                results[index] = result
                if on_result is not None:
                    on_result(result)

        await asyncio.gather(*(worker(r) for r in self.runners[: max(1, len(requests))]))
        return [r for r in results if r is not None]

    def close(self) -> None:
        for runner in self.runners:
            runner.close()
