"""Streaming task results from a runner's thread to the event loop.

A runner's daemon thread takes sync requests from the shared ``RequestFeed`` and
runs them back to back; a ``ResultStream`` carries the finished results to the loop
in batches (one loop wake-up per batch, not per task) and lets the loop watch the
attempt in progress with one timer. The thread stops streaming, and the loop
learns why from a ``Handback``, when the feed is empty, when a request needs the
loop (an async workflow, a failed attempt to retry or record), when an attempt
overruns its timeout (the thread is then abandoned), or when something breaks.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from reinforge.explorer.attempts import Attempts
from reinforge.explorer.messages import TaskRequest, TaskResult

Deliver = Callable[[int, TaskResult], None]


class RequestFeed:
    """The requests of one scheduler run, handed out once each, in order, to any thread."""

    def __init__(self, requests: Sequence[TaskRequest]) -> None:
        self._items = iter(enumerate(requests))
        self._lock = threading.Lock()

    def take(self) -> Attempts | None:
        """The next request (as its not yet started ``Attempts``), or None when empty."""
        with self._lock:
            item = next(self._items, None)
        return None if item is None else Attempts(*item)


@dataclass
class Handback:
    """Why a runner's thread stopped streaming.

    ``attempts``: a request the loop must finish (None: the feed is empty);
    ``failure``: how its attempt on the thread ended, if it raised;
    ``timed_out``: its attempt overran the timeout (the thread is abandoned);
    ``crash``: a bug in the runner or in ``deliver`` (not a workflow's failure),
    raised again on the loop.
    """

    attempts: Attempts | None = None
    failure: Exception | None = None
    timed_out: bool = False
    crash: BaseException | None = None


@dataclass
class _Running:
    """The attempt in progress on the thread, as the loop's watchdog sees it."""

    seq: int
    attempts: Attempts
    started: float


class ResultStream:
    """State shared by a runner's thread (producing results) and the loop (consuming them).

    Everything mutable is guarded by ``lock``. The thread appends results and wakes
    the loop only when no wake-up is already pending, so a busy stream costs one
    loop callback per batch of results rather than per task.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, deliver: Deliver) -> None:
        self.loop = loop
        self.deliver = deliver
        self.outcome: asyncio.Future[Handback] = loop.create_future()
        self.lock = threading.Lock()
        self.results: list[tuple[int, TaskResult]] = []
        self.wake_pending = False
        self.stopped = False  # set by the loop: the thread must not start or report anything more
        self.seq = 0  # attempts started so far
        self.current: _Running | None = None
        self.watching = False  # a watchdog timer is armed or about to be
        self.timer: asyncio.TimerHandle | None = None

    # ---- thread side -----------------------------------------------------------------

    def begin(self, attempts: Attempts) -> bool:
        """Record an attempt as started; False if the loop has stopped this stream."""
        with self.lock:
            if self.stopped:
                return False
            self.seq += 1
            self.current = _Running(self.seq, attempts, time.monotonic())
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

    def end(self, handback: Handback) -> None:
        """The thread stops streaming (unless the loop stopped it first)."""
        with self.lock:
            if self.stopped:
                return
            self.current = None
        self._call(self.settle, handback)

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
        except BaseException as exc:  # surface it from the runner, as an awaited call would
            self.stop()
            self._finish(Handback(crash=exc))

    def settle(self, handback: Handback) -> None:
        self.drain()
        self._finish(handback)

    def _finish(self, handback: Handback) -> None:
        if not self.outcome.done():
            self.outcome.set_result(handback)

    def arm(self) -> None:
        """Start watching the attempt in progress (called when the thread starts one)."""
        with self.lock:
            current = self.current
            if current is None or self.stopped:
                self.watching = False
                return
        deadline = current.started + current.attempts.request.timeout
        self.timer = self.loop.call_at(
            self.loop.time() + deadline - time.monotonic(), self.check, current.seq
        )

    def check(self, seq: int) -> None:
        """The deadline of attempt ``seq`` has passed: time it out if it is still running."""
        with self.lock:
            current = self.current
            if current is None or self.stopped:
                self.watching = False
                return
            overran = current.seq == seq
            if overran:
                self.stopped = True
        if not overran:  # that attempt finished; watch the one running now
            self.arm()
            return
        self.drain()
        self._finish(Handback(current.attempts, timed_out=True))

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
        if self.timer is not None:
            self.timer.cancel()
