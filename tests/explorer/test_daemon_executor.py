"""The explorer loop's default executor: hung user calls neither block exit nor starve
later calls (issue: trust the run, 3)."""

from __future__ import annotations

import threading

import pytest

from reinforge.explorer.daemon_executor import DaemonThreadExecutor

RELEASE = threading.Event()


def teardown_module() -> None:
    RELEASE.set()


def test_calls_run_and_threads_are_reused() -> None:
    pool = DaemonThreadExecutor(max_workers=2, stale_after=60)
    try:
        assert [pool.submit(pow, 2, i).result(5) for i in range(5)] == [1, 2, 4, 8, 16]
        assert pool.threads == 1  # one call at a time needs one thread
    finally:
        pool.shutdown()


def test_calls_stuck_longer_than_a_task_may_run_do_not_hold_a_place() -> None:
    """Every thread is hung in a call older than any task's timeout: such a call belongs
    to an abandoned task, so a new call gets a thread of its own instead of waiting
    forever (an experience operator run with asyncio.to_thread, say)."""
    pool = DaemonThreadExecutor(max_workers=2, stale_after=0.2)
    try:
        hung = [pool.submit(RELEASE.wait) for _ in range(2)]
        assert pool.submit(sum, [1, 2]).result(10) == 3
        assert not any(f.done() for f in hung)
    finally:
        pool.shutdown()


def test_calls_beyond_max_workers_wait_while_the_busy_ones_are_recent() -> None:
    pool = DaemonThreadExecutor(max_workers=1, stale_after=60)
    gate = threading.Event()
    try:
        first = pool.submit(gate.wait)
        second = pool.submit(sum, [1, 2])
        with pytest.raises(TimeoutError):
            second.result(0.2)
        gate.set()
        assert first.result(5) and second.result(5) == 3
        assert pool.threads == 1
    finally:
        pool.shutdown()
