"""Engine requests in flight: waiting for them with a timeout, and cancelling them all."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any


def _closed_error() -> RuntimeError:
    return RuntimeError(
        "this ModelWrapper is closed (its task timed out or was abandoned, or the "
        "explorer shut down): it sends no more requests to the engine"
    )


def _timeout_error(timeout: float | None) -> TimeoutError:
    return TimeoutError(f"no reply from the engine within {timeout}s")


class RequestTracker:
    """Remembers a wrapper's unresolved engine requests, so an abandoned task's can be
    cancelled (``cancel_all``), after which it refuses new ones."""

    def __init__(self) -> None:
        self._pending: set[Future] = set()
        self._lock = threading.Lock()
        self._closed = False

    def track(self, submit: Callable[..., Future], *args: Any) -> Future:
        """Every engine request goes through here: it is remembered until it resolves.

        Futures that are done on return (the mock engine answers in ``submit``) are
        not tracked at all: this is on the path of every sampled reply.
        """
        if self._closed:
            raise _closed_error()
        fut = submit(*args)
        if fut.done():
            return fut
        with self._lock:
            closed = self._closed  # closed meanwhile: the request must not escape
            if not closed:
                self._pending.add(fut)
        if closed:
            fut.cancel()
            raise _closed_error()
        fut.add_done_callback(self._forget)
        return fut

    def _forget(self, fut: Future) -> None:
        with self._lock:
            self._pending.discard(fut)

    @staticmethod
    def wait(fut: Future, timeout: float | None) -> Any:
        """The engine's answer within ``timeout`` seconds (then the request is cancelled)."""
        try:
            return fut.result(timeout=timeout)
        except FutureTimeout:
            fut.cancel()
            raise _timeout_error(timeout) from None

    @staticmethod
    async def wait_async(fut: Future, timeout: float | None) -> Any:
        if timeout is None:
            return await asyncio.wrap_future(fut)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(fut), timeout)
        except TimeoutError:
            fut.cancel()
            raise _timeout_error(timeout) from None

    def cancel_all(self) -> int:
        """Cancel every request still in flight and refuse new ones; how many were cancelled."""
        with self._lock:
            self._closed = True
            pending, self._pending = list(self._pending), set()
        return sum(fut.cancel() for fut in pending)
