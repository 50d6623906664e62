"""Parent-side handles on timeout workers, and a small thread-safe pool of them.

A :class:`WorkerProcess` is one persistent interpreter (see
:mod:`reinforge.rewards.timeout_worker`) that runs calls for us; when a call
overruns its timeout the process is killed and reaped, and the pool starts a new
one on the next call. Workers are started with ``subprocess`` rather than
``multiprocessing``: a 'spawn' or 'forkserver' child re-imports the parent's
``__main__`` (a training script importing torch, or one without a
``__name__ == "__main__"`` guard), while this one imports only what it runs.
"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from reinforge.rewards.call_outcome import CallOutcome

logger = logging.getLogger(__name__)

_REWARDS_DIR = Path(__file__).resolve().parent
# The worker imports reinforge.rewards only: the package __init__ files import
# their heavy names (torch) lazily, so a worker starts in about a second.
_BOOTSTRAP = (
    "import json, sys\n"
    "sys.path[:] = json.loads(sys.argv[1])\n"
    "from reinforge.rewards.timeout_worker import main\n"
    "main(sys.argv[2:])\n"
)

STARTUP_TIMEOUT_S = 60.0
"""How long a new worker may take to start, and to import a function the first time."""


def _start_worker(socket_fd: int) -> subprocess.Popen[bytes]:
    """Launch a worker interpreter that serves on the inherited socket ``socket_fd``."""
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            _BOOTSTRAP,
            json.dumps([str(entry) for entry in sys.path]),
            str(socket_fd),
        ],
        pass_fds=(socket_fd,),
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C aimed at the trainer should not hit workers
    )


class WorkerError(RuntimeError):
    """A worker could not be started."""


class RewardWorkerCrashed(RuntimeError):
    """A guarded function killed its worker process (twice): its task fails with this."""


def _exit_description(proc: subprocess.Popen[bytes]) -> str:
    code = proc.returncode
    if code is not None and code < 0:
        return f"killed its worker process (signal {-code})"
    return f"killed its worker process (exit code {code})"


class WorkerProcess:
    """One persistent worker interpreter. Not thread-safe: the pool hands it to one caller."""

    def __init__(self) -> None:
        parent_sock, child_sock = socket.socketpair()
        try:
            self._proc = _start_worker(child_sock.fileno())
        except OSError as exc:
            parent_sock.close()
            raise WorkerError(f"cannot start a timeout worker: {exc!r}") from exc
        finally:
            child_sock.close()
        self._conn = Connection(parent_sock.detach())
        self._resolved: set[str] = set()
        if not self._conn.poll(STARTUP_TIMEOUT_S):
            self.kill()
            raise WorkerError(f"timeout worker did not start within {STARTUP_TIMEOUT_S:.0f} s")
        try:
            self._conn.recv()  # ("ready", pid)
        except (EOFError, OSError) as exc:
            self.kill()
            raise WorkerError(f"timeout worker exited during start-up: {exc!r}") from exc

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def alive(self) -> bool:
        return not self._conn.closed and self._proc.poll() is None

    def call(self, target: str, args: tuple, kwargs: dict[str, Any], timeout: float) -> CallOutcome:
        """Run ``target(*args, **kwargs)`` in the worker, killing it after ``timeout`` seconds."""
        if target not in self._resolved:
            # Importing the function's module (sympy, ...) must not eat into the call's budget.
            outcome = self._request(("resolve", target), STARTUP_TIMEOUT_S)
            if not outcome.ok:
                return outcome
            self._resolved.add(target)
        hard_limit = max(2 * timeout, timeout + 10.0)
        return self._request(("call", target, args, kwargs, hard_limit), timeout)

    def _request(self, request: tuple, timeout: float) -> CallOutcome:
        try:
            self._conn.send(request)
        except (OSError, ValueError) as exc:  # ValueError: closed connection
            self.kill()
            return CallOutcome("error", error=f"timeout worker is gone: {exc!r}")
        except Exception as exc:  # pickling the arguments failed; nothing was sent
            return CallOutcome("error", error=f"cannot send arguments to worker: {exc!r}")
        if not self._conn.poll(timeout):
            self.kill()
            return CallOutcome("timeout", error=f"{request[1]} exceeded {timeout:g} s")
        try:
            status, payload = self._conn.recv()
        except (EOFError, OSError):
            self.kill()
            return CallOutcome("crashed", error=f"{request[1]} {_exit_description(self._proc)}")
        if status == "ok":
            return CallOutcome("ok", value=payload)
        return CallOutcome("error", error=str(payload))

    def kill(self) -> None:
        """Kill and reap the process now, and close our end of the socket."""
        self._conn.close()
        self.kill_process()

    def kill_process(self) -> None:
        """Kill and reap the process but leave the socket to the thread that may be using it.

        That thread then reads end-of-file at once (and, the pool being shut down,
        returns an error outcome rather than retrying).
        """
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()

    def close(self, grace_s: float = 1.0) -> None:
        """Ask the worker to exit (end-of-file on its socket); kill it if it lingers."""
        self._conn.close()
        try:
            self._proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.kill()


class WorkerPool:
    """Up to ``max_workers`` workers, started lazily and shared by threads.

    A call takes an idle worker (or starts one, or waits for one), runs on it and
    gives it back; a worker killed by a timeout is dropped, to be replaced on demand.
    """

    def __init__(self, max_workers: int) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self.max_workers = max_workers
        self._idle: list[WorkerProcess] = []
        self._all: set[WorkerProcess] = set()
        self._starting = 0
        self._cond = threading.Condition()
        self._closed = False

    def call(self, target: str, args: tuple, kwargs: dict[str, Any], timeout: float) -> CallOutcome:
        """Run ``target`` on a pooled worker; see :meth:`WorkerProcess.call`.

        A worker that dies mid-call says nothing about the answer: the call runs again
        on a fresh worker, and if that dies too it raises :class:`RewardWorkerCrashed`
        (naming ``target`` and the exit code or signal) instead of scoring it 0.
        """
        outcome = self._call_once(target, args, kwargs, timeout)
        if outcome.status != "crashed":
            return outcome
        if self._closed:  # shutdown() killed it: not a crash, and nothing to retry on
            return CallOutcome("error", error=f"{target}: the worker pool shut down mid-call")
        logger.warning("reward worker died (%s); retrying on a fresh worker", outcome.error)
        outcome = self._call_once(target, args, kwargs, timeout)
        if outcome.status == "crashed":
            raise RewardWorkerCrashed(
                f"reward function {target} killed its worker process twice: {outcome.error}"
            )
        return outcome

    def _call_once(
        self, target: str, args: tuple, kwargs: dict[str, Any], timeout: float
    ) -> CallOutcome:
        try:
            worker = self._acquire()
        except WorkerError as exc:
            return CallOutcome("error", error=str(exc))
        try:
            return worker.call(target, args, kwargs, timeout)
        finally:
            self._release(worker)

    def _acquire(self) -> WorkerProcess:
        with self._cond:
            while True:
                if self._closed:
                    raise WorkerError("the timeout worker pool is shut down")
                while self._idle:
                    worker = self._idle.pop()
                    if worker.alive:
                        return worker
                    self._all.discard(worker)
                if len(self._all) + self._starting < self.max_workers:
                    self._starting += 1
                    break
                self._cond.wait()
        try:
            worker = WorkerProcess()
        except BaseException:
            with self._cond:
                self._starting -= 1
                self._cond.notify()
            raise
        with self._cond:
            self._starting -= 1
            self._all.add(worker)
        logger.debug("started timeout worker pid %d", worker.pid)
        return worker

    def _release(self, worker: WorkerProcess) -> None:
        with self._cond:
            if worker.alive and not self._closed:
                self._idle.append(worker)
            else:
                self._all.discard(worker)
                if self._closed and worker.alive:
                    worker.kill()
            self._cond.notify()

    @property
    def size(self) -> int:
        """Number of live worker processes."""
        with self._cond:
            return len(self._all)

    def worker_pids(self) -> list[int]:
        with self._cond:
            return sorted(worker.pid for worker in self._all)

    def shutdown(self) -> None:
        """Stop every worker (idle ones gracefully, busy ones by force) and reap them."""
        with self._cond:
            self._closed = True
            workers, idle = list(self._all), set(self._idle)
            self._all.clear()
            self._idle.clear()
            self._cond.notify_all()
        for worker in workers:
            if worker in idle:
                worker.close()
            else:
                worker.kill_process()
