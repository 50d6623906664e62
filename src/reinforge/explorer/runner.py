"""A WorkflowRunner executes TaskRequests: build or reuse the workflow, run it with a timeout, retry.

Two ways to drive a runner:

* ``run(request)``: one request, awaited on the event loop. Sync workflows make one
  round trip to the runner's daemon thread.
* ``serve(feed, deliver)``: what the Scheduler uses. The runner's daemon thread
  takes sync requests from the shared ``RequestFeed`` itself and runs them back to
  back, handing finished results to the loop in batches. A round trip per task
  (two thread wake-ups and two GIL hand-overs) costs about as much as a fast
  workflow, so this roughly halves the explorer's own overhead per task.

Both keep the same guarantees: every request ends in exactly one TaskResult; each
attempt of a sync workflow is bounded by ``request.timeout`` (a loop timer watches
the attempt in progress; on expiry the thread is abandoned - it is a daemon, so
a hung workflow never blocks process exit - and the runner continues on a fresh
one); failed or timed-out attempts are retried up to ``max_retries`` times.
"""

from __future__ import annotations

import asyncio
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from reinforge.core import Experience, Task
from reinforge.explorer.daemon_worker import DaemonWorker
from reinforge.explorer.messages import FAILED, OK, TIMEOUT, TaskRequest, TaskResult
from reinforge.models import InferenceEngine, ModelWrapper
from reinforge.workflows.workflow import can_reuse

Deliver = Callable[[int, TaskResult], None]


class NoExperienceError(RuntimeError):
    """A workflow finished without producing anything to learn from: a failure, not a success."""


class _Expired(TimeoutError):
    """The per-task timeout fired while the workflow was still running on the thread."""


def _expire(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_exception(_Expired())


class RequestFeed:
    """The requests of one scheduler run, handed out once each, in order, to any thread."""

    def __init__(self, requests: Sequence[TaskRequest]) -> None:
        self._items = iter(enumerate(requests))
        self._lock = threading.Lock()

    def take(self) -> tuple[int, TaskRequest] | None:
        with self._lock:
            return next(self._items, None)


class _Stream:
    """State shared by a runner's thread (producing results) and the loop (consuming them).

    Everything mutable is guarded by ``lock``. The thread appends results and wakes
    the loop only when no wake-up is already pending, so a busy stream costs one
    loop callback per batch of results rather than per task.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, deliver: Deliver) -> None:
        self.loop = loop
        self.deliver = deliver
        self.outcome: asyncio.Future = loop.create_future()
        self.lock = threading.Lock()
        self.results: list[tuple[int, TaskResult]] = []
        self.wake_pending = False
        self.stopped = False  # set by the loop: the thread must not start or report anything more
        self.seq = 0  # attempts started so far
        # the attempt in progress: (seq, index, request, attempt number, its start, first start)
        self.current: tuple[int, int, TaskRequest, int, float, float] | None = None
        self.watching = False  # a watchdog timer is armed or about to be
        self.timer: asyncio.TimerHandle | None = None

    # ---- thread side -----------------------------------------------------------------

    def begin(self, index: int, request: TaskRequest, attempt: int, first_start: float) -> bool:
        """Record an attempt as started; False if the loop has stopped this stream."""
        with self.lock:
            if self.stopped:
                return False
            self.seq += 1
            self.current = (self.seq, index, request, attempt, time.monotonic(), first_start)
            arm = not self.watching
            self.watching = True
        if arm:
            self._call(self.arm)
        return True

    def post(self, index: int, result: TaskResult) -> bool:
        """Hand a finished result to the loop; False if the stream was stopped meanwhile."""
        with self.lock:
            if self.stopped:
                return False
            self.current = None
            self.results.append((index, result))
            if self.wake_pending:
                return True
            self.wake_pending = True
        self._call(self.drain)
        return True

    def end(self, outcome: tuple[Any, ...]) -> None:
        with self.lock:
            if self.stopped:
                return
            self.current = None
        self._call(self.settle, outcome)

    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            with self.lock:
                self.stopped = True

    # ---- loop side ---------------------------------------------------------------------

    def drain(self) -> None:
        with self.lock:
            items, self.results = self.results, []
            self.wake_pending = False
        try:
            for index, result in items:
                self.deliver(index, result)
        except BaseException as exc:  # surface it from serve(), as an awaited call would
            self.stop()
            if not self.outcome.done():
                self.outcome.set_result(("error", exc))

    def settle(self, outcome: tuple[Any, ...]) -> None:
        self.drain()
        if not self.outcome.done():
            self.outcome.set_result(outcome)

    def arm(self) -> None:
        """Start watching the attempt in progress (called when the thread starts one)."""
        with self.lock:
            current = self.current
            if current is None or self.stopped:
                self.watching = False
                return
        seq, _, request, _, started, _ = current
        self.timer = self.loop.call_at(
            self.loop.time() + started + request.timeout - time.monotonic(), self.check, seq
        )

    def check(self, seq: int) -> None:
        """The deadline of attempt ``seq`` has passed: time it out if it is still running."""
        with self.lock:
            current = self.current
            if current is None or self.stopped:
                self.watching = False
                return
            if current[0] != seq:  # that attempt finished; watch the one running now
                timed_out = None
            else:
                timed_out = current
                self.stopped = True
        if timed_out is None:
            self.arm()
            return
        self.drain()
        _, index, request, attempt, _, first_start = timed_out
        if not self.outcome.done():
            self.outcome.set_result(("timeout", index, request, attempt, first_start))

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
        if self.timer is not None:
            self.timer.cancel()


_HANDOFF = object()  # the thread met an async workflow: the loop must run it


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
        self._is_async: dict[str, bool] = {}

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
            try:
                return await asyncio.wait_for(workflow.run_async(), request.timeout)
            except TimeoutError:
                self._abandon_model()  # threads it handed work to may still be sampling
                raise
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

    # ---- one request -------------------------------------------------------------------

    async def run(self, request: TaskRequest) -> TaskResult:
        """Run one request; never raises: failures come back as a status and a message."""
        return await self._run_attempts(request, 1, time.monotonic(), FAILED, None)

    async def _run_attempts(
        self, request: TaskRequest, first: int, start: float, status: str, error: str | None
    ) -> TaskResult:
        attempts = first - 1
        for attempts in range(first, request.max_retries + 2):
            try:
                task = Task.from_dict(request.task)
                exps = await self._run_once(task, request)
                exps = self._check(exps, task, request)
                return _result(request, OK, exps, None, attempts, start)
            except TimeoutError:
                status, error = TIMEOUT, _timeout_message(request)
            except Exception as exc:
                status, error = FAILED, _failure_message(request, exc)
                self._workflow = None
        return _result(request, status, [], error, attempts, start)

    # ---- a stream of requests ----------------------------------------------------------

    async def serve(self, feed: RequestFeed, deliver: Deliver) -> None:
        """Run requests from ``feed`` until it is empty, passing each result to ``deliver``.

        Async workflows run on the loop one by one; sync ones are streamed on this
        runner's thread (see the module docstring). Results arrive in completion order.
        """
        while (item := feed.take()) is not None:
            index, request = item
            if self._request_is_async(request):
                deliver(index, await self.run(request))
                continue
            outcome = await self._stream(feed, deliver, index, request)
            kind = outcome[0]
            if kind == "done":
                return
            if kind == "handoff":
                _, index, request = outcome
                deliver(index, await self.run(request))
            elif kind == "timeout":
                _, index, request, attempt, first_start = outcome
                self._abandon_thread()
                deliver(
                    index,
                    await self._run_attempts(
                        request, attempt + 1, first_start, TIMEOUT, _timeout_message(request)
                    ),
                )
            else:  # "error": a bug in the runner or in ``deliver``, not a workflow failure
                raise outcome[1]

    def _request_is_async(self, request: TaskRequest) -> bool:
        """Whether the request names an async workflow (cached per name). A name that
        does not resolve counts as sync: the attempt on the thread then fails with the
        resolver's message, as it would on the loop."""
        name = request.task.get("workflow")
        cached = self._is_async.get(name) if isinstance(name, str) else None
        if cached is not None:
            return cached
        try:
            is_async = bool(Task(workflow=name).workflow_cls.is_async)
        except Exception:
            return False
        if isinstance(name, str):
            self._is_async[name] = is_async
        return is_async

    async def _stream(
        self, feed: RequestFeed, deliver: Deliver, index: int, request: TaskRequest
    ) -> tuple[Any, ...]:
        stream = _Stream(asyncio.get_running_loop(), deliver)
        self._thread().post(lambda: self._stream_on_thread(stream, feed, index, request))
        try:
            return await stream.outcome
        finally:
            stream.stop()

    def _stream_on_thread(
        self, stream: _Stream, feed: RequestFeed, index: int, request: TaskRequest
    ) -> None:
        try:
            while True:
                result = self._attempts_on_thread(stream, index, request)
                if result is None:
                    return  # stopped: timed out (this thread is abandoned) or cancelled
                if result is _HANDOFF:
                    stream.end(("handoff", index, request))
                    return
                if not stream.post(index, result):
                    return
                item = feed.take()
                if item is None:
                    stream.end(("done",))
                    return
                index, request = item
        except BaseException as exc:  # keep the loop informed whatever happens here
            stream.end(("error", exc))

    def _attempts_on_thread(
        self, stream: _Stream, index: int, request: TaskRequest
    ) -> TaskResult | object | None:
        """``_run_attempts`` for a sync workflow, on the runner's thread."""
        start = time.monotonic()
        status, error = FAILED, None
        attempts = 0
        for attempts in range(1, request.max_retries + 2):
            if not stream.begin(index, request, attempts, start):
                return None
            try:
                task = Task.from_dict(request.task)
                if task.workflow_cls.is_async:
                    return _HANDOFF
                exps = self._run_sync(task, request.repeat_times, request.run_id_base)
                exps = self._check(exps, task, request)
                return _result(request, OK, exps, None, attempts, start)
            except TimeoutError:
                status, error = TIMEOUT, _timeout_message(request)
            except Exception as exc:
                status, error = FAILED, _failure_message(request, exc)
                if not stream.stopped:
                    self._workflow = None
        return _result(request, status, [], error, attempts, start)

    # ---- results -----------------------------------------------------------------------

    def _check(self, exps: Any, task: Task, request: TaskRequest) -> list[Experience]:
        if not isinstance(exps, list) or not all(isinstance(e, Experience) for e in exps):
            raise TypeError(
                f"workflow {task.workflow_cls.__name__} returned {type(exps).__name__}; expected list[Experience]"
            )
        if not exps:
            raise NoExperienceError(f"workflow {task.workflow_cls.__name__} returned no experience")
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


def _result(
    request: TaskRequest,
    status: str,
    exps: list[Experience],
    error: str | None,
    attempts: int,
    start: float,
) -> TaskResult:
    return TaskResult(
        request.taskset,
        str(request.task.get("batch_id", "")),
        str(request.task.get("task_id", "")),
        status,
        exps,
        error,
        attempts,
        time.monotonic() - start,
    )


def _timeout_message(request: TaskRequest) -> str:
    task_id = request.task.get("task_id", "")
    return f"task {task_id} of taskset '{request.taskset}' timed out after {request.timeout:g}s"


def _failure_message(request: TaskRequest, exc: Exception) -> str:
    task_id = request.task.get("task_id", "")
    return (
        f"task {task_id} of taskset '{request.taskset}' failed: {type(exc).__name__}: {exc}\n"
        + "".join(traceback.format_exception(exc)[-6:])
    )
