"""Child processes that do not outlive the process that started them."""

from __future__ import annotations

import contextlib
import sys


def die_with_parent() -> None:
    """In the child before exec: on Linux, be killed when the driver dies (even by
    SIGKILL), so no rank outlives its run."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
