"""The two operator interfaces: the legacy synchronous one and the async ``V1`` one.

An experience operator sees every experience one explore step produced and returns a
(possibly filtered, re-weighted or annotated) list plus metrics. ``ExperienceOperatorV1``
is the interface new operators implement: it is async, so operators that call models
(LLM judges, reward models) can await them, and it may be handed auxiliary model
clients. ``ExperienceOperator`` is kept for existing synchronous operators; the
factory adapts them to ``V1`` automatically (see ``legacy.py``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, TypeAlias

from reinforge.core import Experience

if TYPE_CHECKING:
    from openai import AsyncOpenAI

AuxiliaryModels: TypeAlias = "dict[str | int, list[AsyncOpenAI]]"
"""Auxiliary model clients by model id: OpenAI-compatible async clients (any object
with the same interface works, e.g. a fake in tests)."""

OperatorResult: TypeAlias = tuple[list[Experience], dict[str, Any]]


class ExperienceOperator(ABC):
    """Legacy synchronous operator. Prefer ``ExperienceOperatorV1`` for new code."""

    @abstractmethod
    def process(self, exps: list[Experience]) -> OperatorResult:
        """Transform one explore step's experiences; return them and metrics."""

    def close(self) -> None:
        """Release resources, if any."""


class ExperienceOperatorV1(ABC):
    """Async operator that may use auxiliary models (``self.auxiliary_models``)."""

    # Class-level default so subclasses need not call ``super().__init__``.
    auxiliary_models: AuxiliaryModels | None = None

    def set_auxiliary_model(self, auxiliary_models: AuxiliaryModels | None = None) -> None:
        """Give the operator the auxiliary model clients it may call in ``process``."""
        self.auxiliary_models = auxiliary_models

    async def prepare(self) -> None:
        """Asynchronous set-up (warm a client, load a lookup table), if any."""

    @abstractmethod
    async def process(self, exps: list[Experience]) -> OperatorResult:
        """Transform one explore step's experiences; return them and metrics."""

    async def close(self) -> None:
        """Release resources, if any."""
