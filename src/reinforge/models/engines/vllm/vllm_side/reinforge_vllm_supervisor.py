"""Runs a vLLM server and takes its whole process group down with it.

Usage: ``python reinforge_vllm_supervisor.py PARENT_PID -- CMD...`` (in a new session).

vLLM's server starts an engine-core process and workers that outlive a killed
server. The supervisor asks the kernel for SIGTERM when reinforge (the process
that started it) dies, and on SIGTERM or when the server exits it stops the
server, then kills what is left of its process group. The server itself gets
SIGKILL if the supervisor is killed outright. Standalone: it runs in the
vLLM venv, where reinforge is not installed.
"""

import ctypes
import os
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1


def _on_parent_death(sig: int) -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, sig)


def main() -> int:
    parent = int(sys.argv[1])
    cmd = sys.argv[sys.argv.index("--") + 1 :]
    _on_parent_death(signal.SIGTERM)
    if os.getppid() != parent:  # reinforge died before the request above took effect
        return 1
    # if this supervisor is SIGKILLed itself (Ray kills a dead actor's children), the
    # server goes too; its engine core follows its parent by itself
    child = subprocess.Popen(cmd, preexec_fn=lambda: _on_parent_death(signal.SIGKILL))

    def stop(signum: int, frame: object) -> None:
        child.terminate()
        deadline = time.monotonic() + 5
        while child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        os.killpg(0, signal.SIGKILL)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    code = child.wait()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(0, signal.SIGKILL)  # whatever the server left behind
    return code


if __name__ == "__main__":
    sys.exit(main())
