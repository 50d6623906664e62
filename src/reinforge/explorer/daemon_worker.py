"""Runs blocking callables on a daemon thread that can be abandoned.

A sync workflow that hangs cannot be killed from Python. Running it on a daemon
thread lets the runner give up on it after the timeout, start a fresh thread for
the next task, and still lets the process exit (pool threads would be joined).

Three ways in:

* ``submit`` returns a ``concurrent.futures.Future`` (usable from any thread);
* ``submit_to_loop`` returns an ``asyncio.Future`` of the given loop and resolves it
  with one ``call_soon_threadsafe``: what a runner awaits for a single task. It
  skips the Future → ``wrap_future`` chaining, a measurable share of the cost of a
  task when the workflow itself takes tens of microseconds;
* ``post`` runs a callable that reports back by itself (a runner's stream of tasks).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


def _settle(fut: asyncio.Future, result: Any, exc: BaseException | None) -> None:
    # Runs on the loop. The awaiting side may have given up (timeout, cancellation).
    if fut.done():
        return
    if exc is None:
        fut.set_result(result)
    else:
        fut.set_exception(exc)


class DaemonWorker:
    def __init__(self, name: str) -> None:
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            self._run_item(*item)
            del item  # do not keep the last task's arguments alive while idle

    @staticmethod
    def _run_item(
        fn: Callable[[], Any],
        fut: Any,  # concurrent Future (submit), asyncio Future (submit_to_loop) or None (post)
        loop: asyncio.AbstractEventLoop | None,
    ) -> None:
        if fut is None:  # ``post``: fn reports its own outcome
            fn()
            return
        if loop is None:  # ``submit``
            if not fut.set_running_or_notify_cancel():
                return
            try:
                fut.set_result(fn())
            except BaseException as exc:
                fut.set_exception(exc)
            return
        if fut.done():  # cancelled or timed out before it started
            return
        result, error = None, None
        try:
            result = fn()
        except BaseException as exc:
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
            loop.call_soon_threadsafe(_settle, fut, result, error)

    def submit(self, fn: Callable[[], Any]) -> Future:
        fut: Future = Future()
        self._queue.put((fn, fut, None))
        return fut

    def submit_to_loop(
        self, fn: Callable[[], Any], loop: asyncio.AbstractEventLoop
    ) -> asyncio.Future:
        """Run ``fn`` on this thread; the returned future belongs to ``loop``."""
        fut = loop.create_future()
        self._queue.put((fn, fut, loop))
        return fut

    def post(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on this thread; it must deliver its results (and errors) itself."""
        self._queue.put((fn, None, None))

    def stop(self) -> None:
        """Ask the thread to exit after its current call (it is never joined)."""
        self._queue.put(None)
