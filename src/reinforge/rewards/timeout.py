"""Run a pure function under a wall-clock timeout, from any thread.

Math checkers (sympy via math-verify) can spin for minutes on a pathological
response. math-verify's own timeout uses ``signal.alarm``, which works only in
the main thread, and workflows score responses in runner threads; so rewards
call it with its timeouts off and wrap the whole check in
:func:`call_with_timeout`, which runs the function in a persistent worker
process (see :mod:`reinforge.rewards.worker_pool`) and kills that process when
the time is up. A warm call costs one socket round trip (well under a
millisecond); with ``timeout=None`` or ``0`` the function runs in-process.

The function must be importable by name in a fresh interpreter: a module-level
function (``module:qualname``), not a lambda, a closure or something in
``__main__``. Arguments and the result must be picklable.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import traceback
from collections.abc import Callable
from typing import Any

from reinforge.rewards.call_outcome import CallOutcome
from reinforge.rewards.timeout_worker import resolve_target
from reinforge.rewards.worker_pool import WorkerPool

logger = logging.getLogger(__name__)

_DEFAULT_MAX_WORKERS = min(4, os.cpu_count() or 1)
_lock = threading.Lock()
_pool: WorkerPool | None = None
_pool_pid = 0
_max_workers = int(os.environ.get("REINFORGE_TIMEOUT_WORKERS", _DEFAULT_MAX_WORKERS))


def target_name(func: Callable[..., Any] | str) -> str:
    """The ``"module:qualname"`` by which a worker process imports ``func``."""
    if isinstance(func, str):
        resolvable = ":" in func
        name = func
    else:
        module = getattr(func, "__module__", None)
        qualname = getattr(func, "__qualname__", None)
        resolvable = bool(module and qualname) and module != "__main__"
        resolvable = resolvable and "<" not in str(qualname)  # <lambda>, <locals>
        name = f"{module}:{qualname}"
    if not resolvable:
        raise ValueError(
            f"{func!r} cannot run under a timeout: it must be a module-level function "
            "importable by name (not a lambda, a closure or a function in __main__), "
            "or a 'module:qualname' string"
        )
    return name


def call_with_timeout(
    func: Callable[..., Any] | str,
    args: tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
    *,
    timeout: float | None,
) -> CallOutcome:
    """Return ``func(*args, **kwargs)`` as a :class:`CallOutcome`, giving up after ``timeout`` s.

    Does not raise for what happens inside the call: an exception becomes an
    ``"error"`` outcome and an overrun a ``"timeout"`` one (the worker that ran it
    is killed, a warning is logged and the next call starts a fresh one; the
    built-in rewards score a timeout 0, as a response that hangs the checker is
    taken to be wrong). A call that kills its worker
    process (a segfault, ``os._exit``, the OOM killer) is run once more on a fresh
    worker; if that dies too, ``RewardWorkerCrashed`` is raised, so the task fails
    with the reason instead of a correct answer silently scoring 0. Concurrent
    callers share up to :func:`set_max_workers` workers and wait for a free one.
    """
    kwargs = kwargs or {}
    if not timeout or timeout <= 0:
        return _call_in_process(func, args, kwargs)
    target = target_name(func)
    outcome = _current_pool().call(target, tuple(args), kwargs, float(timeout))
    if outcome.timed_out:
        logger.warning("%s timed out after %g s; its worker was killed", target, timeout)
    elif not outcome.ok:
        logger.debug("%s failed in the timeout worker: %s", target, outcome.error)
    return outcome


def _call_in_process(func: Callable[..., Any] | str, args: tuple, kwargs: dict) -> CallOutcome:
    try:
        function = resolve_target(func) if isinstance(func, str) else func
        return CallOutcome("ok", value=function(*args, **kwargs))
    except Exception:
        return CallOutcome("error", error=traceback.format_exc())


def _current_pool() -> WorkerPool:
    """The process-wide pool; a forked child gets its own rather than its parent's workers."""
    global _pool, _pool_pid
    with _lock:
        if _pool is None or _pool_pid != os.getpid():
            _pool = WorkerPool(_max_workers)
            _pool_pid = os.getpid()
        return _pool


def set_max_workers(max_workers: int) -> None:
    """Set how many worker processes may run at once (default: min(4, CPUs)).

    Stops the current workers; new ones start on demand. The environment variable
    ``REINFORGE_TIMEOUT_WORKERS`` sets the initial value.
    """
    global _max_workers
    if max_workers < 1:
        raise ValueError("max_workers must be at least 1")
    shutdown_workers()
    _max_workers = max_workers


def worker_pids() -> list[int]:
    """Process ids of the live workers (for diagnostics and tests)."""
    with _lock:
        pool = _pool if _pool_pid == os.getpid() else None
    return pool.worker_pids() if pool is not None else []


def shutdown_workers() -> None:
    """Stop and reap all workers of this process; runs automatically at exit."""
    global _pool
    with _lock:
        pool, _pool = (_pool if _pool_pid == os.getpid() else None), None
    if pool is not None:
        pool.shutdown()


atexit.register(shutdown_workers)
