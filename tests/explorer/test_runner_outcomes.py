"""What a runner records for workflows that return nothing, reuse through the old
``resettable`` name, and report their own metrics (issue: trust the run, 12 and 13)."""

from __future__ import annotations

import asyncio

from reinforge.core import Experience, Task
from reinforge.explorer.messages import FAILED, OK, TaskRequest
from reinforge.explorer.runner import WorkflowRunner
from reinforge.explorer.step_stats import ResultStats, step_metrics
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
    return TaskRequest(task, 1, 0, 30.0, retries)


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


@WORKFLOWS.register_module("test_reports_env_steps", force=True)
class ReportsEnvSteps(Workflow):
    """One experience per character of the question, each reporting its length."""

    def run(self) -> list[Experience]:
        q = self.task.raw_task["q"]
        exps = self.model.chat([{"role": "user", "content": q}], n=len(q))
        for exp in exps:
            exp.metrics["actual_env_steps"] = len(q)
        return exps


def test_workflow_metrics_reach_the_step_metrics() -> None:
    """Averaged per task first (as Trinity-RFT's runner does), so a task with many
    experiences counts once: tasks of 1 and 3 steps average 2, not (1 + 3 * 3) / 4."""
    runner = WorkflowRunner(MockEngine())
    try:
        results = run_all(runner, [request("test_reports_env_steps", q) for q in ("a", "bbb")])
    finally:
        runner.close()
    for prefix in ("explore/", "eval/arith/"):
        metrics = step_metrics(results, prefix)
        assert metrics[f"{prefix}workflow/actual_env_steps/mean"] == 2.0
        assert metrics[f"{prefix}workflow/actual_env_steps/max"] == 3.0
        assert metrics[f"{prefix}workflow/actual_env_steps/min"] == 1.0


def test_result_stats_merged_step_by_step_give_the_metrics_of_all_results() -> None:
    """The run summary adds up each step's numbers; it must equal step_metrics over
    every result of the run (same values, same order of workflow metrics)."""
    runner = WorkflowRunner(MockEngine())
    try:
        results = run_all(
            runner, [request("test_reports_env_steps", q) for q in ("a", "bbb", "cc", "dddd")]
        )
    finally:
        runner.close()
    merged = ResultStats().add(results[:1]).merge(ResultStats().add(results[1:3]))
    merged.merge(ResultStats().add(results[3:]))
    assert merged.metrics("explore/") == step_metrics(results, "explore/")
    assert list(merged.metrics("explore/")) == list(step_metrics(results, "explore/"))
