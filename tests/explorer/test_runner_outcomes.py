"""What a runner records for workflows that return nothing, reuse through the old
``resettable`` name, and report their own metrics (issue: trust the run, 12 and 13)."""

from __future__ import annotations

import asyncio

from reinforge.core import Experience, Task
from reinforge.explorer.explorer import step_metrics
from reinforge.explorer.messages import FAILED, OK, TaskRequest
from reinforge.explorer.runner import WorkflowRunner
from reinforge.models import MockEngine
from reinforge.workflows import WORKFLOWS, Workflow

CONSTRUCTED: list[int] = []


@WORKFLOWS.register_module("test_returns_nothing", force=True)
class ReturnsNothing(Workflow):
    def run(self) -> list[Experience]:
        return []


@WORKFLOWS.register_module("test_old_resettable", force=True)
class OldResettable(Workflow):
    """Written for an older Trinity-RFT: ``resettable`` instead of ``can_reset``."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        CONSTRUCTED.append(1)
        self.question = self.task.raw_task["q"]

    @property
    def resettable(self) -> bool:
        return True

    def reset(self, task: Task) -> None:
        self.task = task
        self.question = task.raw_task["q"]

    def run(self) -> list[Experience]:
        exp = self.model.chat([{"role": "user", "content": self.question}])[0]
        exp.metrics["actual_env_steps"] = len(self.question)
        exp.reward = 1.0
        return [exp]


def request(workflow: str, q: str = "hi", retries: int = 0) -> TaskRequest:
    task = Task(workflow=workflow, raw_task={"q": q}, task_id=q)
    return TaskRequest(task.to_dict(), 1, 0, 30.0, retries)


def run_all(runner: WorkflowRunner, requests: list[TaskRequest]):
    async def go():
        return [await runner.run(r) for r in requests]

    return asyncio.run(go())


def test_no_experience_is_a_failure_with_its_reason() -> None:
    runner = WorkflowRunner(MockEngine())
    try:
        [result] = run_all(runner, [request("test_returns_nothing", retries=1)])
    finally:
        runner.close()
    assert result.status == FAILED and result.attempts == 2
    assert "returned no experience" in result.error


def test_deprecated_resettable_workflows_are_reused() -> None:
    CONSTRUCTED.clear()
    runner = WorkflowRunner(MockEngine())
    try:
        results = run_all(runner, [request("test_old_resettable", q) for q in ("a", "bb", "ccc")])
    finally:
        runner.close()
    assert [r.status for r in results] == [OK] * 3
    assert len(CONSTRUCTED) == 1  # built once, then reset for each next task


def test_workflow_metrics_reach_the_step_metrics() -> None:
    runner = WorkflowRunner(MockEngine())
    try:
        results = run_all(runner, [request("test_old_resettable", q) for q in ("a", "bbb")])
    finally:
        runner.close()
    metrics = step_metrics(results, "explore/")
    assert metrics["explore/workflow/actual_env_steps"] == 2.0
