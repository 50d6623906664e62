"""The scheduler hands TaskRequests to runners (up to ``concurrency`` at once) and collects results."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from reinforge.core import Task
from reinforge.explorer.messages import TaskRequest, TaskResult
from reinforge.explorer.runner import WorkflowRunner
from reinforge.explorer.stream import RequestFeed


def make_requests(
    tasks: Sequence[Task], *, taskset: str, timeout: float, max_retries: int
) -> list[TaskRequest]:
    """Expand tasks into requests: one per task for ``can_repeat`` workflows, else one per repeat."""
    requests = []
    for task in tasks:
        repeat = task.repeat_times
        if task.workflow_cls.can_repeat:
            requests.append(TaskRequest(task, repeat, 0, timeout, max_retries, taskset))
        else:
            requests.extend(
                TaskRequest(task, 1, run, timeout, max_retries, taskset) for run in range(repeat)
            )
    return requests


class Scheduler:
    """Local asyncio backend: runners are objects in this process, fed from one RequestFeed.

    Each runner takes the next request as soon as it is free (sync workflows straight
    from its own thread, see ``WorkflowRunner.serve``), so a slow task never holds up
    the others and the runners stay busy until the feed is empty.
    """

    def __init__(self, runners: list[WorkflowRunner]) -> None:
        if not runners:
            raise ValueError("scheduler needs at least one runner")
        self.runners = runners

    async def run(
        self, requests: list[TaskRequest], on_result: Callable[[TaskResult], None] | None = None
    ) -> list[TaskResult]:
        """Run all requests; results come back in request order."""
        results: list[TaskResult | None] = [None] * len(requests)

        def deliver(index: int, result: TaskResult) -> None:
            results[index] = result
            if on_result is not None:
                on_result(result)

        feed = RequestFeed(requests)
        await asyncio.gather(
            *(runner.serve(feed, deliver) for runner in self.runners[: max(1, len(requests))])
        )
        return [r for r in results if r is not None]

    def close(self) -> None:
        for runner in self.runners:
            runner.close()
