"""Give freed host memory back to the operating system between training phases.

A training step frees gigabytes of short-lived tensors (activations, logits,
optimizer temporaries) from several threads. glibc's malloc keeps most of that
memory in its heaps instead of returning it, and the holes it leaves are rarely
reused whole: in the demo the process held ~2.6 GB more than its live tensors
(4.8 GB resident for 2.1 GB of tensors). ``malloc_trim(0)`` hands every free page
of every arena back, in ~0.1 s, which is why the trainer calls it after each
micro-batch and after the optimizer step. Elsewhere (macOS, musl) it does nothing.

Since those trims hand memory back at the points where it is free, the trainer also
has glibc serve large blocks from its heaps (``keep_large_blocks``). glibc maps every
block above its mmap threshold (at most 32 MiB) afresh and unmaps it when freed, so
each use faults its pages in again: a demo step makes several such tensors per
micro-batch (the bf16 copy of the 57 MB embedding/head weight, its 113 MB fp32
gradient, a vocabulary chunk's logits), about a million page faults and 2.6 s of
kernel time a step. With mapping and automatic trimming off, freed blocks are reused
and the trims are what return them. ``REINFORGE_MALLOC_KEEP_LARGE=0`` leaves glibc's
default; glibc's own ``MALLOC_MMAP_MAX_`` or ``MALLOC_TRIM_THRESHOLD_``, when set,
wins.
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Callable, Mapping

from reinforge.core.glibc import glibc_function

#: ``mallopt``'s parameter numbers (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
#: the largest ``M_TRIM_THRESHOLD`` (a C int): free() never trims on its own
NEVER_TRIM = 2**31 - 1
KEEP_LARGE_ENV = "REINFORGE_MALLOC_KEEP_LARGE"


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    return glibc_function("malloc_trim", [ctypes.c_size_t], ctypes.c_int)


def release_free_memory() -> bool:
    """Return the allocator's free pages to the OS; False where that is not possible."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def keeps_large_blocks(environ: Mapping[str, str]) -> bool:
    """Whether the trainer's process should serve large blocks from its heaps (a
    ValueError naming the variable for a value other than 0 or 1)."""
    raw = environ.get(KEEP_LARGE_ENV, "1").strip()
    if raw not in ("0", "1"):
        raise ValueError(f"{KEEP_LARGE_ENV} must be 1 (on) or 0 (glibc's default), not {raw!r}")
    if "MALLOC_MMAP_MAX_" in environ or "MALLOC_TRIM_THRESHOLD_" in environ:
        return False  # glibc read the user's own choice at start
    return raw == "1"


def keep_large_blocks(environ: Mapping[str, str] = os.environ) -> bool:
    """``mallopt(M_MMAP_MAX, 0)`` and ``mallopt(M_TRIM_THRESHOLD, NEVER_TRIM)`` for
    this process, where ``keeps_large_blocks`` says so; True where both were set.
    Blocks mapped before keep their mapping until freed."""
    if not keeps_large_blocks(environ):
        return False
    mallopt = glibc_function("mallopt", [ctypes.c_int, ctypes.c_int], ctypes.c_int)
    if mallopt is None:
        return False
    return mallopt(M_MMAP_MAX, 0) == 1 and mallopt(M_TRIM_THRESHOLD, NEVER_TRIM) == 1
