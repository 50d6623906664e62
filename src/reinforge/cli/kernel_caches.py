"""Bound the CPU matmul libraries' primitive caches in the ``reinforge`` process.

torch runs bf16 matmuls on the CPU through oneDNN, called through ideep. Each keeps an
LRU cache of up to 1024 primitives (the kernel set up for one shape), and each
primitive holds its own buffers. A training step whose micro-batches have a new
number of tokens every time makes about a hundred new primitives per step, so on the
demo the process grew by about 0.05 GiB a step until the caches filled, about 0.45 GiB
by step 12, memory that is never used again (docs/lab/2026-12-02-kernel-caches.md).
128 entries each hold what one micro-batch reuses (a few dozen shapes: every layer's
projections forward and backward) and little more.

Both libraries read their capacity from the environment when their cache is first
used, so this belongs at the start of the process, before the first matmul. A value
the user set (``ONEDNN_PRIMITIVE_CACHE_CAPACITY``, ``LRU_CACHE_CAPACITY``) is kept.
Trainer ranks inherit the bound; vLLM servers get their libraries' defaults back, as
nothing here was measured on vLLM's kernels.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

#: entries per cache, unless the user's environment says otherwise
DEFAULT_CAPACITY = 128
#: oneDNN's primitive cache, ideep's LRU caches
VARIABLES = ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")
#: names the variables set here, not by the user: processes this one starts inherit the
#: environment, and those that run other code (vLLM servers) drop them again
MARKER = "REINFORGE_KERNEL_CACHES_SET"


def bound_kernel_caches(
    environ: MutableMapping[str, str] = os.environ, capacity: int = DEFAULT_CAPACITY
) -> dict[str, str]:
    """Set each cache's capacity the user has not set; returns what was set."""
    if MARKER in environ:  # a process started by a run: its parent chose already
        return {}
    chosen = {name: str(capacity) for name in VARIABLES if name not in environ}
    environ.update(chosen)
    environ[MARKER] = ",".join(chosen)
    return chosen
