"""A default executor for the explorer's event loop whose threads never block exit.

User code hands blocking calls to the loop's default executor
(``asyncio.to_thread``, ``loop.run_in_executor(None, ...)``). The standard one joins
its threads when the loop shuts down and at interpreter exit, so one call that
never returns (a hung reward function, an environment that deadlocks) would hang
the whole run after its task had long timed out. This one runs calls on daemon
threads and does not wait for them on shutdown: the task times out, the run goes
on, and the process still exits.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


class DaemonThreadExecutor(ThreadPoolExecutor):
    """Up to ``max_workers`` daemon threads, started on demand, never joined.

    A ``ThreadPoolExecutor`` only in type (asyncio accepts no other as a loop's
    default executor); it shares none of its thread handling."""

    def __init__(self, max_workers: int = 32, name: str = "reinforge-default-executor") -> None:
        super().__init__(max_workers=1)  # fields only: no thread of the base class is started
        self.max_workers = max_workers
        self.name = name
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        self._shutdown = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._queue.put((future, fn, args, kwargs))
            if self._idle == 0 and self._threads < self.max_workers:
                self._threads += 1
                threading.Thread(
                    target=self._work, name=f"{self.name}-{self._threads}", daemon=True
                ).start()
            else:
                self._idle -= self._idle > 0
        return future

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, fn, args, kwargs = item
            del item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as exc:
                    future.set_exception(exc)
            del future, fn, args, kwargs
            with self._lock:
                self._idle += 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop taking work; idle threads exit, busy ones are left to finish (not waited for)."""
        with self._lock:
            self._shutdown = True
            threads = self._threads
        for _ in range(threads):
            self._queue.put(None)


def install(loop: Any) -> None:
    """Make ``loop``'s default executor a ``DaemonThreadExecutor`` (once)."""
    if not isinstance(getattr(loop, "_default_executor", None), DaemonThreadExecutor):
        loop.set_default_executor(DaemonThreadExecutor())
