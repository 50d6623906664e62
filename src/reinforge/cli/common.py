"""What the commands share: option types, error reporting, signal handling, run driving.

Nothing heavy is imported here at module level: ``reinforge --help`` and every
``reinforge CMD --help`` load only typer and rich. A command imports what it needs
(torch, transformers, sqlalchemy, the config schema) when it runs.
"""

from __future__ import annotations

import gc
import os
import signal
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from reinforge.config import ReinforgeConfig

err = Console(stderr=True)

ConfigOpt = Annotated[Path, typer.Option("--config", "-c", help="YAML config file.")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set", help="Override a config key, e.g. --set buffer.batch_size=8 (repeatable)."
    ),
]
RunDirOpt = Annotated[
    Path | None, typer.Option("--run-dir", help="Run directory (overrides run_dir).")
]


@dataclass
class CliState:
    """Settings of the global options that later code reads."""

    debug: bool = False
    #: -v given (once or more): a trainer rank's fault also prints its traceback
    verbose: int = 0
    # True when the process is the ``reinforge`` command itself (not a test runner
    # invoking the app): only then may process-wide tweaks such as gc.freeze apply
    standalone: bool = False
    runtime_ready: bool = False


state = CliState()


def user_errors() -> tuple[type[BaseException], ...]:
    """Errors that are the user's to fix (config, data, files, disk): one line, exit 2.

    Every ValueError counts (reinforge's config, taskset and buffer errors derive from
    it). The classes are imported on first use, so that ``except user_errors()``
    costs nothing until an error actually happens.
    """
    from sqlalchemy.exc import DatabaseError

    from reinforge.buffer.pipeline import PipelineError
    from reinforge.core import RegistryError
    from reinforge.models import ModelNotFoundError

    return (ValueError, PipelineError, ModelNotFoundError, RegistryError, OSError, DatabaseError)


def _self_explained() -> tuple[type[BaseException], ...]:
    """Errors whose message says what to fix by itself (others get their type and a hint)."""
    from reinforge.buffer import BufferStorageError, TasksetError
    from reinforge.buffer.pipeline import PipelineError
    from reinforge.config import ConfigError
    from reinforge.core import RegistryError
    from reinforge.models import ModelNotFoundError

    return (
        ConfigError,
        TasksetError,
        BufferStorageError,
        PipelineError,
        ModelNotFoundError,
        RegistryError,
        OSError,
    )


def describe(exc: BaseException, buffer: Path | None = None) -> str:
    """One line for an error: reinforge's own say what to fix; others get a hint."""
    from sqlalchemy.exc import DatabaseError

    if isinstance(exc, DatabaseError):
        name = f"the buffer {buffer}" if buffer is not None else "the buffer database"
        return (
            f"{name} is corrupt or unreadable ({exc.orig}); move it aside (or delete it) "
            "to start a new buffer, or point buffer.storage.path elsewhere"
        )
    if isinstance(exc, _self_explained()):
        return str(exc)
    return f"{type(exc).__name__}: {exc} (run with --debug for the traceback)"


def fail(exc: BaseException, buffer: Path | None = None) -> typer.Exit:
    """Report ``exc`` in one line (``buffer``: the run's buffer file, named if it is
    the database that failed); the caller raises the returned exit (code 2)."""
    if state.debug:
        traceback.print_exception(exc)
    err.print(
        f"[bold red]error:[/bold red] {escape(describe(exc, buffer))}",
        highlight=False,
        soft_wrap=True,
    )
    return typer.Exit(code=2)


#: exit code of a run whose trainer ranks failed (one died, raised or hung)
RANK_FAULT_EXIT = 3


def rank_fault() -> type[BaseException]:
    """``TrainerRankError``, imported when an error is on its way (it imports torch)."""
    from reinforge.trainer.parallel.ranked_trainer import TrainerRankError

    return TrainerRankError


def fail_rank(exc: BaseException) -> typer.Exit:
    """A trainer rank's fault in one line (which rank, what happened, that the same
    command resumes); with --verbose or --debug, the driver's and the rank's
    tracebacks too. The caller raises the returned exit (code 3)."""
    if state.debug or state.verbose:
        traceback.print_exception(exc)
    summary = getattr(exc, "summary", str(exc).splitlines()[0])
    err.print(f"[bold red]error:[/bold red] {escape(summary)}", highlight=False, soft_wrap=True)
    return typer.Exit(code=RANK_FAULT_EXIT)


#: exit code of a run stopped by the weight check after a sync: an engine replica does
#: not serve the weights the trainer synced (docs/verification.md)
WEIGHT_CHECK_EXIT = 4


def weight_check_fault() -> type[BaseException]:
    """``WeightCheckError``, imported when an error is on its way (it imports torch)."""
    from reinforge.trainer.sync_check import WeightCheckError

    return WeightCheckError


def fail_weight_check(exc: BaseException) -> typer.Exit:
    """The weight check's finding in one line (engine, replica, version, the gap); with
    --verbose or --debug the traceback too. The caller raises the returned exit (code 4)."""
    if state.debug or state.verbose:
        traceback.print_exception(exc)
    err.print(f"[bold red]error:[/bold red] {escape(str(exc))}", highlight=False, soft_wrap=True)
    return typer.Exit(code=WEIGHT_CHECK_EXIT)


def fail_message(message: str) -> typer.Exit:
    """Report a plain usage mistake in one line; the caller raises the exit (code 2)."""
    err.print(f"[bold red]error:[/bold red] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code=2)


def prepare_runtime() -> None:
    """Once per process, before a command loads models: quiet the Hugging Face progress
    bars and, in the ``reinforge`` process itself, freeze the objects created so far,
    cap glibc's malloc arenas (``host_allocator.py``) and bound the CPU matmul
    libraries' primitive caches (``kernel_caches.py``).

    Objects created at import time (torch, transformers, ...) live for the whole run;
    moving them to the permanent generation makes full garbage collections, which the
    explorer triggers often, cheap (about 12% of explorer overhead). This runs inside
    the commands rather than at start-up so that ``--help`` imports none of it.
    """
    if state.runtime_ready:
        return
    state.runtime_ready = True
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    if state.standalone:
        gc.freeze()
        _cap_malloc_arenas()
        from reinforge.cli.kernel_caches import bound_kernel_caches

        bound_kernel_caches()


def _cap_malloc_arenas() -> None:
    """Fewer glibc arenas, less freed memory held (``host_allocator.py``)."""
    from reinforge.cli.host_allocator import cap_malloc_arenas

    try:
        cap_malloc_arenas()
    except ValueError as exc:
        raise fail_message(str(exc)) from None


def load(config: Path, overrides: list[str] | None, run_dir: Path | None) -> ReinforgeConfig:
    """The validated config of ``config`` with ``--set`` overrides and ``--run-dir``."""
    from reinforge.config import load_config

    cfg = load_config(config, overrides or [])
    if run_dir is not None:
        cfg.run_dir = str(run_dir)
    return cfg


@contextmanager
def sigterm_as_interrupt() -> Iterator[list[int]]:
    """Handle SIGTERM like Ctrl-C (asyncio then cancels the run, which saves and stops)
    inside the block; the list holds the number of the signal that stopped the run.
    The previous handler is back afterwards (the command may run inside a test)."""
    received = [int(signal.SIGINT)]

    def on_sigterm(signum: int, frame: object) -> None:
        received[0] = signum
        os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    # a background job of a non-interactive shell (`nohup reinforge run ... &` in a
    # script) starts with SIGINT ignored, and then SIGTERM would do nothing: the
    # path above goes through SIGINT, so SIGINT stops the run too while it works
    previous_int = None
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield received
    finally:
        signal.signal(signal.SIGTERM, previous)
        if previous_int is not None:
            signal.signal(signal.SIGINT, previous_int)


def interrupted(message: str, signum: int) -> typer.Exit:
    """Ctrl-C / SIGTERM: say where the run stopped; exit 128 + the signal's number."""
    err.print(f"[bold yellow]{escape(message)}[/bold yellow]", highlight=False)
    return typer.Exit(code=128 + signum)


def drive(session: Any, cfg: ReinforgeConfig, work: Callable[[], Any], stopped: str) -> Any:
    """Await ``work`` in ``session`` (operators prepared and closed around it), then
    close the session. User errors become one line and exit 2; Ctrl-C / SIGTERM print
    ``stopped`` (or what a ``RunInterrupted`` says) and exit 128 + the signal."""
    import asyncio

    from reinforge.launcher.modes import RunInterrupted

    with sigterm_as_interrupt() as stop_signal:
        try:
            return asyncio.run(session.run(work))
        except user_errors() as exc:
            raise fail(exc, cfg.storage_path) from None
        except rank_fault() as exc:
            raise fail_rank(exc) from None
        except weight_check_fault() as exc:
            raise fail_weight_check(exc) from None
        except (RunInterrupted, KeyboardInterrupt) as exc:
            said = str(exc) if isinstance(exc, RunInterrupted) else stopped
            raise interrupted(said, stop_signal[0]) from None
        finally:
            session.close()
