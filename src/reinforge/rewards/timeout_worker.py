"""The worker-process side of :mod:`reinforge.rewards.timeout`.

A worker is a fresh interpreter (not a fork: the parent has threads, CUDA and
locks) that serves calls over a socket: ``("resolve", target)`` imports a
function named ``"module:qualname"``, ``("call", target, args, kwargs,
hard_limit)`` runs it. Every reply is ``("ok", value)`` or ``("error", text)``;
the parent enforces the timeout by killing the process.

This module imports only the standard library. The ``reinforge`` and
``reinforge.core`` package ``__init__`` files import their names lazily, so a
worker that imports ``reinforge.rewards`` does not load torch.

Should the parent die, an idle worker reads end-of-file and exits; a busy one is
ended by ``SIGALRM`` (default action: terminate, even while the GIL is held)
armed for ``hard_limit`` seconds around each call.
"""

from __future__ import annotations

import importlib
import os
import signal
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any


def resolve_target(target: str) -> Callable[..., Any]:
    """Import and return the function named ``"package.module:Qualified.name"``."""
    module_name, sep, qualname = target.partition(":")
    if not sep or not module_name or not qualname:
        raise ValueError(f"target must look like 'module:function', got {target!r}")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{target} is not callable")
    return obj


def _run_call(function: Callable[..., Any], args: tuple, kwargs: dict, hard_limit: float) -> tuple:
    """Run one call with the self-destruct timer armed; return the reply tuple."""
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.setitimer(signal.ITIMER_REAL, hard_limit)
    try:
        return ("ok", function(*args, **kwargs))
    except Exception:
        return ("error", traceback.format_exc())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def serve(conn: Connection) -> None:
    """Answer requests on ``conn`` until the parent closes it."""
    functions: dict[str, Callable[..., Any]] = {}
    conn.send(("ready", os.getpid()))
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        except Exception:  # a whole message arrived but its arguments would not unpickle here
            conn.send(("error", traceback.format_exc()))
            continue
        kind, target = request[0], request[1]
        try:
            if target not in functions:
                functions[target] = resolve_target(target)
        except Exception:
            conn.send(("error", traceback.format_exc()))
            continue
        if kind == "resolve":
            reply: tuple = ("ok", None)
        else:
            _, _, args, kwargs, hard_limit = request
            reply = _run_call(functions[target], args, kwargs, hard_limit)
        try:
            conn.send(reply)
        except Exception as exc:  # the value could not be pickled
            conn.send(("error", f"{target} returned an unpicklable value: {exc!r}"))


def main(argv: list[str]) -> None:
    """Entry point: ``argv`` is ``[socket_fd]`` (the bootstrap has already set sys.path)."""
    serve(Connection(int(argv[0])))
