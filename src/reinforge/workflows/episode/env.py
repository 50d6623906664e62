"""``BaseEnv``: the environment side of an agent-environment loop (rLLM's env interface).

``reset`` starts an episode and returns ``(observation, info)``; ``step(action)``
returns ``(observation, reward, done, info)``, gym-style without the separate
truncation flag. Environments whose methods block (subprocesses, HTTP) can be
driven from an async workflow with ``await self.run_in_executor(env.step, action)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any


class BaseEnv(ABC):
    """Subclass it and implement ``reset`` and ``step``."""

    @property
    def idx(self) -> Any:
        """An optional index or id of this environment instance (set by whoever made it)."""
        return getattr(self, "_idx", None)

    @idx.setter
    def idx(self, value: Any) -> None:
        self._idx = value

    @abstractmethod
    def reset(self, task: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Start a new episode (on ``task`` if given); return ``(observation, info)``."""

    @abstractmethod
    def step(self, action: Any) -> tuple[Any, float, bool, dict[str, Any]]:
        """Apply ``action``; return ``(observation, reward, done, info)``."""

    def close(self) -> None:
        """Release resources (processes, containers, connections). Default: nothing."""

    @classmethod
    def from_dict(cls, info: dict[str, Any]) -> BaseEnv:
        """Build an environment from a task row or config dict. Default: ``cls(**info)``."""
        return cls(**info)

    @staticmethod
    def is_multithread_safe() -> bool:
        """Whether several episodes may drive instances of this env from different threads."""
        return True
