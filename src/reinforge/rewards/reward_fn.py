"""Reward functions: score one response, return named reward components."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from reinforge.core.registry import Registry

REWARD_FUNCTIONS = Registry("reward function")


class RewardFn(ABC):
    """Base class of reward functions.

    Constructed once per workflow with the taskset's ``reward_fn_args`` as keyword
    arguments; called once per response. Returns a dict of named components (for
    example ``{"accuracy": 1.0, "format_score": 0.1}``); workflows use the sum of
    the components as the scalar reward and record each one as a metric.
    """

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs

    @abstractmethod
    def __call__(
        self, response: str, truth: str | None = None, prompt: str | None = None, **kwargs: Any
    ) -> dict[str, float]:
        """Score ``response`` against the reference answer ``truth``."""
