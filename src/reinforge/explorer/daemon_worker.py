"""Runs blocking callables on a daemon thread that can be abandoned.

A sync workflow that hangs cannot be killed from Python. Running it on a daemon
thread lets the runner give up on it after the timeout, start a fresh thread for
the next task, and still lets the process exit (pool threads would be joined).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


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
            fn, fut = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn())
            except BaseException as exc:
                fut.set_exception(exc)

    def submit(self, fn: Callable[[], Any]) -> Future:
        fut: Future = Future()
        self._queue.put((fn, fut))
        return fut

    def stop(self) -> None:
        """Ask the thread to exit after its current call (it is never joined)."""
        self._queue.put(None)
