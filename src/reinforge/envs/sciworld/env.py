"""ScienceWorld environments, kept warm in a small pool, and action parsing.

Each ``scienceworld.ScienceWorldEnv`` runs the simulator in its own JVM (about a
second to start and a few hundred MB), so finished episodes hand their env back
to a process-wide pool and the next episode reloads a task in it instead of
starting a JVM. An env that raised is closed, never reused. The package is an
optional dependency (``pip install reinforge[envs]``; it needs Java 11+).
"""

from __future__ import annotations

import atexit
import contextlib
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

INSTALL_HINT = (
    "the sciworld workflow needs the `scienceworld` package (and Java 11+): "
    "pip install 'reinforge[envs]'"
)
NO_MATCH = "No known action matches that input."

_BACKTICKS = re.compile(r"```(?:[a-z]*\n)?\s*(.*?)\s*```", re.DOTALL)
_PREFIX = re.compile(r"^\s*(?:action|next action)\s*:\s*", re.IGNORECASE)


def parse_action(text: str) -> str:
    """The action a reply asks for: the last ```...``` block, else its last non-empty line.

    Returns "" when the reply holds nothing usable.
    """
    text = text or ""
    found = [m.strip() for m in _BACKTICKS.findall(text) if m.strip()]
    if found:
        action = found[-1].splitlines()[0]
    else:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        action = lines[-1] if lines else ""
    return _PREFIX.sub("", action).strip().strip("`").strip()


def _new_env(step_limit: int) -> Any:
    try:
        from scienceworld import ScienceWorldEnv
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    return ScienceWorldEnv("", envStepLimit=step_limit)


class EnvPool:
    """Idle ScienceWorld envs shared by all workflows of the process."""

    def __init__(self, max_idle: int = 8) -> None:
        self.max_idle = max_idle
        self._idle: list[Any] = []
        self._lock = threading.Lock()

    @contextmanager
    def env(self, step_limit: int) -> Iterator[Any]:
        """An env for one episode; returned to the pool if the episode did not raise."""
        with self._lock:
            env = self._idle.pop() if self._idle else None
        if env is None:
            env = _new_env(step_limit)
        env.envStepLimit = step_limit
        try:
            yield env
        except BaseException:
            _close(env)
            raise
        with self._lock:
            if len(self._idle) < self.max_idle:
                self._idle.append(env)
                return
        _close(env)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for env in idle:
            _close(env)


def _close(env: Any) -> None:
    # a JVM that already died cannot be shut down again; nothing more to do then
    with contextlib.suppress(Exception):
        env.close()


POOL = EnvPool()
atexit.register(POOL.close)
