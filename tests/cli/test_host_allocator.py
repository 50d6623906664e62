"""The ``reinforge`` process caps glibc's malloc arenas (``cli/host_allocator.py``).

The cap is observed, not assumed: a fresh process prepares its runtime as the
``reinforge`` command does, then threads allocate at the same time, and glibc's
``malloc_stats`` report counts the arenas they got.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from reinforge.cli.host_allocator import DEFAULT_ARENAS, ENV, arena_cap

glibc = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.confstr("CS_GNU_LIBC_VERSION") is None,
    reason="arenas are glibc's",
)

# Prepares the runtime as the ``reinforge`` script does (standalone), then six threads
# each malloc once and wait until all have: every thread needs an arena at once.
PROBE = """
import ctypes, threading
from reinforge.cli.common import prepare_runtime, state
state.standalone = True
prepare_runtime()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
barrier = threading.Barrier(6)
def work():
    libc.malloc(4096)
    barrier.wait()
threads = [threading.Thread(target=work) for _ in range(6)]
for t in threads: t.start()
for t in threads: t.join()
libc.malloc_stats()
"""


def arenas_used(**env: str) -> int:
    """Arenas in a probe process's ``malloc_stats`` (it writes them to stderr)."""
    environ = {k: v for k, v in os.environ.items() if k not in ("MALLOC_ARENA_MAX", ENV)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return sum(line.startswith("Arena ") for line in done.stderr.splitlines())


@glibc
def test_the_run_process_allocates_from_at_most_two_arenas():
    assert arenas_used() <= DEFAULT_ARENAS


@glibc
def test_zero_leaves_glibc_its_arena_per_thread():
    assert arenas_used(**{ENV: "0"}) > DEFAULT_ARENAS


@glibc
def test_the_variable_sets_the_cap():
    assert arenas_used(**{ENV: "1"}) == 1


def test_glibc_own_variable_wins():
    assert arena_cap({"MALLOC_ARENA_MAX": "4", ENV: "1"}) is None


@pytest.mark.parametrize("value", ["two", "-1", "1.5"])
def test_a_bad_value_names_the_variable(value):
    with pytest.raises(ValueError, match=ENV):
        arena_cap({ENV: value})
