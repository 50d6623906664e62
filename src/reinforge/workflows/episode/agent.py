"""``BaseAgent``: the policy side of an agent-environment loop (rLLM's agent interface).

An agent turns environment observations into chat messages for the model and the
model's replies into actions, and records each model call as a ``Step`` of its
``trajectory``. Episode workflows find the agents among their attributes to reset
them between episodes and to collect trajectories nobody committed explicitly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from reinforge.core.episode import Action, Episode, Step, Trajectory

__all__ = ["Action", "BaseAgent", "Episode", "Step", "Trajectory"]


class BaseAgent(ABC):
    """Subclass it and implement ``reset``; most agents also implement the two updates."""

    @property
    def chat_completions(self) -> list[dict[str, Any]]:
        """The conversation to send to the model next (OpenAI message dicts)."""
        return []

    @property
    def trajectory(self) -> Trajectory:
        """The steps recorded since the last ``reset``."""
        return Trajectory()

    def update_from_env(
        self, observation: Any, reward: float, done: bool, info: dict[str, Any], **kwargs: Any
    ) -> None:
        """Take in what the environment returned after the last action (or after reset)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement update_from_env()")

    def update_from_model(self, response: str, **kwargs: Any) -> Action:
        """Take in the model's reply; return the action to send to the environment."""
        raise NotImplementedError(f"{type(self).__name__} does not implement update_from_model()")

    @abstractmethod
    def reset(self) -> None:
        """Forget the previous episode (called at the start of each one)."""

    def get_current_state(self) -> Step | None:
        """The most recent step, or None before the first one."""
        steps = self.trajectory.steps
        return steps[-1] if steps else None
