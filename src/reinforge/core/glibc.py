"""glibc's allocator functions through ctypes, where the C library is glibc.

The trainer hands freed pages back (``malloc_trim``) and the CLI caps malloc arenas
(``mallopt``); both need the same lookup, which finds nothing on macOS or musl.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable
from typing import Any


def glibc_function(name: str, argtypes: list[Any], restype: Any) -> Callable[..., Any] | None:
    """glibc's ``name`` with its C signature set, or None where the C library is not
    glibc (or not Linux) and has no such function."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        function = getattr(libc, name)
    except (OSError, AttributeError):  # not glibc
        return None
    function.argtypes = argtypes
    function.restype = restype
    return function
