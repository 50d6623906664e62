"""Cap glibc's malloc arenas in the ``reinforge`` process.

glibc gives each thread that allocates its own arena (up to 8 per core). A run frees
gigabytes from several threads (torch's intra-op threads, the hf engine's thread, the
explorer's): a freed block can only be reused by a thread of its own arena, so each
arena keeps its own holes and the process holds more than its live tensors. On the
demo (SmolLM2-135M, 2 cores, bf16) two arenas lowered the peak resident memory of a
training step by about 0.1 GiB against glibc's default (single runs, step time
unchanged within their noise; docs/lab/2026-12-02-demo-memory.md). The arithmetic
does not change: only where freed memory goes.

``REINFORGE_MALLOC_ARENA_MAX`` sets the cap (0: leave glibc's default); glibc's own
``MALLOC_ARENA_MAX``, when set, wins and nothing is changed here. Elsewhere than
glibc (macOS, musl) this does nothing.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping

from reinforge.core.glibc import glibc_function

#: ``mallopt``'s parameter number for the arena cap (glibc's malloc.h)
M_ARENA_MAX = -8
#: arenas a run process may use unless told otherwise
DEFAULT_ARENAS = 2
ENV = "REINFORGE_MALLOC_ARENA_MAX"


def arena_cap(environ: Mapping[str, str]) -> int | None:
    """The cap to set for this environment, or None to leave glibc alone (ValueError
    naming the variable for a value that is not a whole number >= 0)."""
    if "MALLOC_ARENA_MAX" in environ:  # glibc read the user's own choice at start
        return None
    raw = environ.get(ENV, str(DEFAULT_ARENAS)).strip()
    try:
        cap = int(raw)
    except ValueError:
        cap = -1
    if cap < 0:
        raise ValueError(
            f"{ENV} must be a whole number of arenas (0: glibc's default), not {raw!r}"
        )
    return cap or None


def cap_malloc_arenas(environ: Mapping[str, str] = os.environ) -> int | None:
    """Set glibc's arena cap for this process (``mallopt(M_ARENA_MAX, n)``); returns
    the cap set, or None where nothing was set. Threads that already have an arena
    keep it, so this belongs at the start of the process, before models load."""
    cap = arena_cap(environ)
    if cap is None:
        return None
    mallopt = glibc_function("mallopt", [ctypes.c_int, ctypes.c_int], ctypes.c_int)
    if mallopt is None:
        return None
    return cap if mallopt(M_ARENA_MAX, cap) == 1 else None
