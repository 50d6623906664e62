"""A WorkflowRunner executes TaskRequests: build or reuse the workflow, run it with a timeout, retry.

Two ways to drive a runner:

* ``run(request)``: one request, awaited on the event loop. Sync workflows make one
  round trip to the runner's daemon thread per attempt.
* ``serve(feed, deliver)``: what the Scheduler uses. The runner's daemon thread
  takes sync requests from the shared ``RequestFeed`` itself and runs them back to
  back, handing finished results to the loop in batches (``stream.ResultStream``).
  A round trip per task (two thread wake-ups and two GIL hand-overs) costs about as
  much as a fast workflow, so this roughly halves the explorer's own overhead per
  task. The thread makes only the first attempt of each request: anything but a
  success (a failure, a timeout, an async workflow) is handed back to the loop,
  which runs the one attempt loop (``_finish``) from there.

Both keep the same guarantees: every request ends in exactly one TaskResult; each
attempt is bounded by ``request.timeout`` (for a sync workflow a loop timer watches
the attempt in progress; on expiry the thread is abandoned - it is a daemon, so
a hung workflow never blocks process exit - and the runner continues on a fresh
one); failed or timed-out attempts are retried up to ``max_retries`` times; the
engine requests of an abandoned attempt (timed out, or the explorer cancelled) are
cancelled, so the engine stops decoding for it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from reinforge.core import Experience, Task
from reinforge.explorer.attempts import Attempts
from reinforge.explorer.daemon_worker import DaemonWorker
from reinforge.explorer.messages import TaskRequest, TaskResult
from reinforge.explorer.stream import Deliver, Handback, RequestFeed, ResultStream
from reinforge.models import InferenceEngine, ModelWrapper
from reinforge.workflows.workflow import can_reuse

__all__ = ["NoExperienceError", "RequestFeed", "WorkflowRunner"]


class NoExperienceError(RuntimeError):
    """A workflow finished without producing anything to learn from: a failure, not a success."""


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
        history_shape: str = "turn",
    ) -> None:
        self.runner_id = runner_id
        self._model_args = {
            "model_name": model_name,
            "default_max_tokens": default_max_tokens,
            "enable_history": enable_history,
            "history_shape": history_shape,
        }
        self.model = ModelWrapper(engine, **self._model_args)
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
        self._abandon_model()

    def _abandon_model(self) -> None:
        """Stop the engine work of an abandoned attempt and give the next one a fresh model.

        The abandoned workflow may still be running (a thread cannot be killed): its
        wrapper refuses new requests and its requests in flight are cancelled, so the
        engine stops decoding for it; a fresh wrapper keeps its later calls out of the
        next task's history and OpenAI clients."""
        self._workflow = None
        self.model.cancel_pending()
        self.model = ModelWrapper(self.model.engine, **self._model_args)

    def _make_workflow(self, task: Task) -> Any:
        if self.model.enable_history:
            # each attempt starts with an empty record: nothing left over from an
            # earlier task (or a failed attempt) leaks into this one's experiences
            self.model.extract_experience_from_history()
        cls = task.workflow_cls
        if self._workflow is not None and type(self._workflow) is cls and can_reuse(self._workflow):
            self._workflow.reset(task)
            return self._workflow
        self._workflow = task.to_workflow(self.model, self.auxiliary_models)
        return self._workflow

    def _workflow_for(self, task: Task, request: TaskRequest) -> Any:
        """The workflow of this attempt, asked for the request's repeats (one place for both)."""
        workflow = self._make_workflow(task)
        if workflow.can_repeat:
            workflow.set_repeat_times(request.repeat_times, request.run_id_base)
        return workflow

    def _run_sync(self, task: Task, request: TaskRequest) -> list[Experience]:
        return self._workflow_for(task, request).run()

    # ---- the attempt loop --------------------------------------------------------------

    async def run(self, request: TaskRequest) -> TaskResult:
        """Run one request; never raises: failures come back as a status and a message."""
        return await self._finish(Attempts(0, request))

    async def _finish(self, attempts: Attempts) -> TaskResult:
        """Attempt the request until one attempt succeeds or none is left."""
        request = attempts.request
        while attempts.more:
            attempts.made += 1
            try:
                task = request.task.for_run(request.repeat_times)
                exps = await self._attempt(task, request)
                return attempts.result(self._stamp(exps, task, request))
            except Exception as exc:
                self._failed(attempts, exc)
        return attempts.result()

    def _failed(self, attempts: Attempts, exc: Exception) -> None:
        attempts.failed(exc)
        if not isinstance(exc, TimeoutError):
            self._workflow = None  # a workflow that raised is not reused

    async def _attempt(self, task: Task, request: TaskRequest) -> list[Experience]:
        """One attempt on the loop: an async workflow here, a sync one on the thread."""
        if task.workflow_cls.is_async:
            workflow = self._workflow_for(task, request)
            try:
                return await asyncio.wait_for(workflow.run_async(), request.timeout)
            except (TimeoutError, asyncio.CancelledError):
                self._abandon_model()  # threads it handed work to may still be sampling
                raise
        # One hop to this runner's daemon thread and one back; the timeout is a plain
        # loop timer that fails the future (cheaper than asyncio.wait_for's wrapper).
        loop = asyncio.get_running_loop()
        fut = self._thread().submit_to_loop(lambda: self._run_sync(task, request), loop)
        timer = loop.call_later(request.timeout, _expire, fut)
        try:
            return await fut
        except (_Expired, asyncio.CancelledError):
            self._abandon_thread()
            raise
        finally:
            timer.cancel()

    # ---- a stream of requests ----------------------------------------------------------

    async def serve(self, feed: RequestFeed, deliver: Deliver) -> None:
        """Run requests from ``feed`` until it is empty, passing each result to ``deliver``.

        Sync requests are streamed on this runner's thread (see the module docstring);
        whatever the thread hands back, and async requests, finish on the loop.
        Results arrive in completion order.
        """
        while (attempts := feed.take()) is not None:
            if not self._request_is_async(attempts.request):
                handed_back = await self._stream(feed, deliver, attempts)
                if handed_back is None:
                    return
                attempts = handed_back
            deliver(attempts.index, await self._finish(attempts))

    @staticmethod
    def _request_is_async(request: TaskRequest) -> bool:
        """Whether the request's workflow is async. A name that does not resolve counts
        as sync: the attempt on the thread then fails with the resolver's message, as
        it would on the loop."""
        try:
            return bool(request.task.workflow_cls.is_async)
        except Exception:
            return False

    async def _stream(
        self, feed: RequestFeed, deliver: Deliver, attempts: Attempts
    ) -> Attempts | None:
        """Stream sync requests on the thread, starting with ``attempts``; return the
        request the loop must finish, or None once the feed is empty."""
        stream = ResultStream(asyncio.get_running_loop(), deliver)
        self._thread().post(lambda: self._stream_on_thread(stream, feed, attempts))
        try:
            back = await stream.outcome
        except asyncio.CancelledError:
            self._abandon_thread()  # the explorer gives up: so does the attempt in progress
            raise
        finally:
            stream.stop()
        if back.crash is not None:
            raise back.crash
        if back.timed_out:
            self._abandon_thread()
            back.attempts.timed_out()
        elif back.failure is not None:
            self._failed(back.attempts, back.failure)
        return back.attempts

    def _stream_on_thread(
        self, stream: ResultStream, feed: RequestFeed, attempts: Attempts | None
    ) -> None:
        try:
            while attempts is not None:
                if self._request_is_async(attempts.request):
                    stream.end(Handback(attempts))
                    return
                attempts.made += 1
                if not stream.begin(attempts):
                    return  # stopped by the loop
                try:
                    task = attempts.request.task.for_run(attempts.request.repeat_times)
                    exps = self._run_sync(task, attempts.request)
                    result = attempts.result(self._stamp(exps, task, attempts.request))
                except Exception as exc:
                    stream.end(Handback(attempts, failure=exc))
                    return
                if not stream.post(attempts.index, result):
                    return  # timed out meanwhile: this thread is abandoned
                attempts = feed.take()
            stream.end(Handback())
        except BaseException as exc:  # keep the loop informed whatever happens here
            stream.end(Handback(crash=exc))

    # ---- results -----------------------------------------------------------------------

    def _stamp(self, exps: Any, task: Task, request: TaskRequest) -> list[Experience]:
        """Check what a workflow returned and give each experience its ids: batch, task,
        and for workflows that run once per repeat, the run (``request.run_id_base``).
        A task id the workflow set to ``"<task id>-<name>"`` is kept: it puts those
        experiences in a group of their own (e.g. a trainable judge's samples)."""
        if not isinstance(exps, list) or not all(isinstance(e, Experience) for e in exps):
            raise TypeError(
                f"workflow {task.workflow_cls.__name__} returned {type(exps).__name__}; expected list[Experience]"
            )
        if not exps:
            raise NoExperienceError(f"workflow {task.workflow_cls.__name__} returned no experience")
        version = self.model.model_version
        number_runs = not task.workflow_cls.can_repeat
        batch_id, task_id, taskset = task.batch_id, task.task_id, request.taskset
        prefix = str(task_id)
        for exp in exps:
            eid = exp.eid
            eid.batch = batch_id
            if not (isinstance(eid.task, str) and eid.task.startswith(prefix + "-")):
                eid.task = task_id  # a workflow's own sub-group ("7-ruler") is kept
            if number_runs and eid.run == 0:
                eid.run = request.run_id_base
            info = exp.info
            info.setdefault("model_version", version)
            info.setdefault("taskset", taskset)
            info.setdefault("task_index", dict(task.index))  # what task selectors read
        return exps

    def close(self) -> None:
        """Stop the thread and cancel the engine requests still in flight."""
        if self._worker is not None:
            self._worker.stop()
            self._worker = None
        self.model.close()
