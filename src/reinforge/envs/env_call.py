"""Calling a text environment from an episode without letting it hang or crash the run.

The ALFWorld and WebShop sessions call their (blocking) environments on a worker
thread with a timeout; whatever goes wrong becomes the session's own error type, whose
message names the environment, the call, where it was (``where``, e.g. the game) and
``termination: error``. Closing never raises over the episode's outcome.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


async def call_env(
    error: type[Exception],
    env_name: str,
    what: str,
    timeout: float,
    where: str,
    fn: Callable[..., Any],
    *args: Any,
    complete: tuple[type[Exception], ...] = (),
    **kwargs: Any,
) -> Any:
    """``fn(*args, **kwargs)`` on a thread, within ``timeout`` seconds; a timeout or an
    exception is raised again as ``error``. ``where`` ends with "; " when it is set; an
    exception of a ``complete`` type already says what and where, and keeps its text."""
    try:
        return await asyncio.wait_for(asyncio.to_thread(fn, *args, **kwargs), timeout)
    except TimeoutError:
        raise error(
            f"the {env_name} environment did not answer {what} within {timeout:g}s "
            f"({where}termination: error)"
        ) from None
    except complete as err:
        raise error(f"{err} (termination: error)") from err
    except Exception as err:
        raise error(
            f"the {env_name} environment failed in {what}: {type(err).__name__}: {err} "
            f"({where}termination: error)"
        ) from err


async def close_env(env: Any, call: Callable[..., Any], error: type[Exception]) -> None:
    """Close ``env`` through the session's guarded ``call``; an ``error`` is logged."""
    try:
        await call("close", env.close)
    except error as err:
        log.warning("%s", err)
