"""A WorkflowRunner executes TaskRequests: build or reuse the workflow, run it with a timeout, retry."""

from __future__ import annotations

import asyncio
import time
import traceback
from typing import Any

from reinforge.core import Experience, Task
from reinforge.explorer.daemon_worker import DaemonWorker
from reinforge.explorer.messages import FAILED, OK, TIMEOUT, TaskRequest, TaskResult
from reinforge.models import InferenceEngine, ModelWrapper


class _Expired(TimeoutError):
    """The per-task timeout fired while the workflow was still running on the thread."""


def _expire(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_exception(_Expired())


class WorkflowRunner:
    """Owns one ModelWrapper (its own history) over a shared engine, and one worker thread."""

    def __init__(
        self,
        engine: InferenceEngine,
        *,
        runner_id: int = 0,
        auxiliary_models: list[Any] | None = None,
        model_name: str | None = None,
        default_max_tokens: int = 256,
        enable_history: bool = False,
    ) -> None:
        self.runner_id = runner_id
        self.model = ModelWrapper(
            engine,
            model_name=model_name,
            default_max_tokens=default_max_tokens,
            enable_history=enable_history,
        )
        self.auxiliary_models = auxiliary_models or []
        self._worker: DaemonWorker | None = None
        self._workflow: Any = None

    def _thread(self) -> DaemonWorker:
        if self._worker is None:
            self._worker = DaemonWorker(f"reinforge-runner-{self.runner_id}")
        return self._worker

    def _abandon_thread(self) -> None:
        if self._worker is not None:
            self._worker.stop()
        self._worker = None
        self._workflow = None  # it may still be in use by the abandoned thread

    def _make_workflow(self, task: Task) -> Any:
        cls = task.workflow_cls
        if self._workflow is not None and type(self._workflow) is cls and cls.can_reset:
            self._workflow.reset(task)
            return self._workflow
        self._workflow = task.to_workflow(self.model, self.auxiliary_models)
        return self._workflow

    def _run_sync(self, task: Task, repeat_times: int, run_id_base: int) -> list[Experience]:
        workflow = self._make_workflow(task)
        if workflow.can_repeat:
            workflow.set_repeat_times(repeat_times, run_id_base)
        return workflow.run()

    async def _run_once(self, task: Task, request: TaskRequest) -> list[Experience]:
        cls = task.workflow_cls
        if cls.is_async:
            workflow = self._make_workflow(task)
            if workflow.can_repeat:
                workflow.set_repeat_times(request.repeat_times, request.run_id_base)
            return await asyncio.wait_for(workflow.run_async(), request.timeout)
        # One hop to this runner's daemon thread and one back; the timeout is a plain
        # loop timer that fails the future (cheaper than asyncio.wait_for's wrapper).
        loop = asyncio.get_running_loop()
        fut = self._thread().submit_to_loop(
            lambda: self._run_sync(task, request.repeat_times, request.run_id_base), loop
        )
        timer = loop.call_later(request.timeout, _expire, fut)
        try:
            return await fut
        except _Expired:
            self._abandon_thread()
            raise
        finally:
            timer.cancel()

    async def run(self, request: TaskRequest) -> TaskResult:
        """Run one request; never raises: failures come back as a status and a message."""
        start = time.monotonic()
        task_id = str(request.task.get("task_id", ""))
        batch_id = str(request.task.get("batch_id", ""))
        status, error = FAILED, None
        attempts = 0
        for attempts in range(1, request.max_retries + 2):
            try:
                task = Task.from_dict(request.task)
                exps = await self._run_once(task, request)
                exps = self._check(exps, task, request)
                return TaskResult(
                    request.taskset,
                    batch_id,
                    task_id,
                    OK,
                    exps,
                    None,
                    attempts,
                    time.monotonic() - start,
                )
            except TimeoutError:
                status = TIMEOUT
                error = f"task {task_id} of taskset '{request.taskset}' timed out after {request.timeout:g}s"
            except Exception as exc:
                status = FAILED
                self._workflow = None
                error = (
                    f"task {task_id} of taskset '{request.taskset}' failed: {type(exc).__name__}: {exc}\n"
                    + "".join(traceback.format_exception(exc)[-6:])
                )
        return TaskResult(
            request.taskset,
            batch_id,
            task_id,
            status,
            [],
            error,
            attempts,
            time.monotonic() - start,
        )

    def _check(self, exps: Any, task: Task, request: TaskRequest) -> list[Experience]:
        if not isinstance(exps, list) or not all(isinstance(e, Experience) for e in exps):
            raise TypeError(
                f"workflow {task.workflow_cls.__name__} returned {type(exps).__name__}; expected list[Experience]"
            )
        version = self.model.model_version
        number_runs = not task.workflow_cls.can_repeat
        batch_id, task_id, taskset = task.batch_id, task.task_id, request.taskset
        for exp in exps:
            eid = exp.eid
            eid.batch = batch_id
            eid.task = task_id
            if number_runs and eid.run == 0:
                eid.run = request.run_id_base
            info = exp.info
            info.setdefault("model_version", version)
            info.setdefault("taskset", taskset)
        return exps

    def close(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None
