"""The worker-process side of :mod:`reinforge.rewards.timeout`.

A worker is a fresh interpreter (not a fork: the parent has threads, CUDA and
locks) that serves calls over a socket: ``("resolve", target)`` imports a
function named ``"module:qualname"``, ``("call", target, args, kwargs,
hard_limit)`` runs it. Every reply is ``("ok", value)`` or ``("error", text)``;
the parent enforces the timeout by killing the process.

This module imports only the standard library, and :func:`main` starts with
light stand-ins for the ``reinforge`` packages, so a worker can import a leaf
module like ``reinforge.rewards.math_check`` without running the package
``__init__`` files, which import torch (seconds of start-up and hundreds of MB
per worker). A stand-in runs the real ``__init__`` the first time one of its
attributes is asked for, so ``from reinforge.rewards import X`` still works.

Should the parent die, an idle worker reads end-of-file and exits; a busy one is
ended by ``SIGALRM`` (default action: terminate, even while the GIL is held)
armed for ``hard_limit`` seconds around each call.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import traceback
import types
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


def install_package_stand_in(name: str, package_dir: str) -> None:
    """Register a stand-in for package ``name`` whose ``__init__`` runs only on demand."""
    if name in sys.modules:
        return
    init_file = os.path.join(package_dir, "__init__.py")
    stand_in = types.ModuleType(name)
    stand_in.__path__ = [package_dir]
    stand_in.__file__ = init_file
    state = {"loaded": False}

    def load_real_init(attr: str) -> Any:
        if state["loaded"] or attr.startswith("__") or not os.path.exists(init_file):
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        state["loaded"] = True
        with open(init_file, encoding="utf-8") as handle:
            code = compile(handle.read(), init_file, "exec")
        exec(code, stand_in.__dict__)
        return getattr(stand_in, attr)

    stand_in.__getattr__ = load_real_init  # type: ignore[method-assign]
    sys.modules[name] = stand_in
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, stand_in)


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
    """Entry point: ``argv`` is ``[sys_path_json, package_dirs_json, socket_fd]``."""
    sys.path[:] = json.loads(argv[0])
    for name, package_dir in json.loads(argv[1]):
        install_package_stand_in(name, package_dir)
    serve(Connection(int(argv[2])))
