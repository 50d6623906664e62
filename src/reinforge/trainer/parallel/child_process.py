"""Rank processes as the driver sees them: children that do not outlive the process that
started them, and ranks that a launcher started elsewhere."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Sequence
from typing import Any


def die_with_parent() -> None:
    """In the child before exec: on Linux, be killed when the driver dies (even by
    SIGKILL), so no rank outlives its run."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG


def dead_peer(procs: Sequence[Any], rank: int, grace: float = 1.0) -> int | None:
    """A rank other than ``rank`` that has exited, waiting up to ``grace`` seconds for one.

    Why: when a rank dies, its peers' next collective fails at once (gloo: "Connection
    reset by peer"), and that traceback can reach the driver before the driver sees the
    dead process exit. The dead rank is the cause, and the error should name it."""
    end = time.monotonic() + grace
    while True:
        dead = [r for r, proc in enumerate(procs) if r != rank and proc.poll() is not None]
        if dead or time.monotonic() > end:
            return dead[0] if dead else None
        time.sleep(0.05)


class RemoteRank:
    """A rank that a launcher (torchrun, srun, a PyTorchJob) started: the driver sees it
    only through its connection, with the calls it makes on a ``subprocess.Popen``.
    It has no exit code here (a death shows as the connection's end), and stopping it
    closes the connection, on which the rank exits."""

    pid: int | None = None
    returncode: int | None = None

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def poll(self) -> int | None:
        return None

    def wait(self, timeout: float | None = None) -> int:
        """Give the rank ``timeout`` seconds to answer a ``close`` before it is cut off."""
        with contextlib.suppress(OSError, EOFError):
            if not self.conn.closed and self.conn.poll(timeout):
                self.conn.recv_bytes()
        return 0

    def terminate(self) -> None:
        self.conn.close()

    kill = terminate
