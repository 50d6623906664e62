"""A default executor for the explorer's event loop whose hung threads never block.

User code hands blocking calls to the loop's default executor
(``asyncio.to_thread``, ``loop.run_in_executor(None, ...)``). The standard one joins
its threads when the loop shuts down and at interpreter exit, so one call that
never returns (a hung reward function, an environment that deadlocks) would hang
the whole run after its task had long timed out; and a few such calls fill its
handful of threads, so every later call (another task's, an experience operator's)
waits forever. This one runs calls on daemon threads and does not wait for them on
shutdown, and a call that has run longer than any task may (``stale_after``: the
explorer's task timeout) belongs to an abandoned task, so its thread no longer
counts against ``max_workers``: the task times out, the run goes on, and the
process still exits.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


class DaemonThreadExecutor(ThreadPoolExecutor):
    """Up to ``max_workers`` live daemon threads, started on demand, never joined.

    A ``ThreadPoolExecutor`` only in type (asyncio accepts no other as a loop's
    default executor); it shares none of its thread handling. A thread busy with one
    call for longer than ``stale_after`` seconds is stuck, not live.
    """

    def __init__(
        self,
        max_workers: int = 32,
        name: str = "reinforge-default-executor",
        stale_after: float = 600.0,
    ) -> None:
        super().__init__(max_workers=1)  # fields only: no thread of the base class is started
        self.max_workers = max_workers
        self.stale_after = stale_after
        self.name = name
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.threads = 0  # started and not exited
        self._idle = 0  # threads waiting for a call that no queued call has claimed yet
        self._unclaimed = 0  # queued calls that no thread is set to take
        self._busy: dict[int, float] = {}  # thread number → start of its current call
        self._recheck: threading.Timer | None = None
        self._shutdown = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._queue.put((future, fn, args, kwargs))
            if self._idle:
                self._idle -= 1
            else:
                self._unclaimed += 1
                self._grow()
        return future

    def _grow(self) -> None:
        """Start threads for unclaimed calls while fewer than ``max_workers`` are live;
        if calls are left waiting, look again when the oldest busy call turns stale.
        Called with the lock held."""
        now = time.monotonic()
        stuck = sum(now - t > self.stale_after for t in self._busy.values())
        while self._unclaimed and self.threads - stuck < self.max_workers:
            self._unclaimed -= 1
            self.threads += 1
            number = next(self._ids)
            threading.Thread(
                target=self._work, args=(number,), name=f"{self.name}-{number}", daemon=True
            ).start()
        if self._unclaimed and self._recheck is None:
            fresh = [t for t in self._busy.values() if now - t <= self.stale_after]
            delay = min(fresh, default=now) + self.stale_after - now + 0.01
            self._recheck = threading.Timer(max(delay, 0.01), self._look_again)
            self._recheck.daemon = True
            self._recheck.start()

    def _look_again(self) -> None:
        with self._lock:
            self._recheck = None
            if not self._shutdown:
                self._grow()

    def _work(self, number: int) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                with self._lock:
                    self.threads -= 1
                return
            future, fn, args, kwargs = item
            del item
            if future.set_running_or_notify_cancel():
                with self._lock:
                    self._busy[number] = time.monotonic()
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as exc:
                    future.set_exception(exc)
            del future, fn, args, kwargs
            with self._lock:
                self._busy.pop(number, None)
                if self._unclaimed:
                    self._unclaimed -= 1  # this thread takes the next queued call
                else:
                    self._idle += 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop taking work; idle threads exit, busy ones are left to finish (not waited for)."""
        with self._lock:
            self._shutdown = True
            threads = self.threads
            if self._recheck is not None:
                self._recheck.cancel()
        for _ in range(threads):
            self._queue.put(None)


def install(loop: Any, stale_after: float | None = None) -> None:
    """Make ``loop``'s default executor a ``DaemonThreadExecutor`` (once); ``stale_after``:
    the longest a task may run, after which its calls no longer hold a thread's place."""
    executor = getattr(loop, "_default_executor", None)
    if not isinstance(executor, DaemonThreadExecutor):
        executor = DaemonThreadExecutor()
        loop.set_default_executor(executor)
    if stale_after is not None:
        executor.stale_after = stale_after
