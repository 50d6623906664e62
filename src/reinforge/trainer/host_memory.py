"""Give freed host memory back to the operating system between training phases.

A training step frees gigabytes of short-lived tensors (activations, logits,
optimizer temporaries) from several threads. glibc's malloc keeps most of that
memory in its heaps instead of returning it, and the holes it leaves are rarely
reused whole: in the demo the process held ~2.6 GB more than its live tensors
(4.8 GB resident for 2.1 GB of tensors). ``malloc_trim(0)`` hands every free page
of every arena back, in ~0.1 s, which is why the trainer calls it after each
micro-batch and after the optimizer step. Elsewhere (macOS, musl) it does nothing.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

from reinforge.core.glibc import glibc_function


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
