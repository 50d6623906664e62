"""Adapting legacy synchronous operators to the async ``ExperienceOperatorV1`` interface."""

from __future__ import annotations

import asyncio

from reinforge.buffer.operators.base import (
    ExperienceOperator,
    ExperienceOperatorV1,
    OperatorResult,
)
from reinforge.core import Experience


class LegacyOperatorAdapter(ExperienceOperatorV1):
    """Runs a legacy operator's blocking ``process``/``close`` in a worker thread.

    The thread keeps a slow synchronous operator from stalling the event loop that
    also drives rollouts. Auxiliary models are stored on the adapter only: the
    legacy interface has no way to use them.
    """

    def __init__(self, operator: ExperienceOperator) -> None:
        self.operator = operator

    async def process(self, exps: list[Experience]) -> OperatorResult:
        return await asyncio.to_thread(self.operator.process, exps)

    async def close(self) -> None:
        await asyncio.to_thread(self.operator.close)

    def __repr__(self) -> str:
        return f"LegacyOperatorAdapter({self.operator!r})"


def ensure_v1(operator: ExperienceOperator | ExperienceOperatorV1) -> ExperienceOperatorV1:
    """``operator`` itself if it is already ``V1``, else wrapped in the adapter."""
    if isinstance(operator, ExperienceOperatorV1):
        return operator
    if isinstance(operator, ExperienceOperator):
        return LegacyOperatorAdapter(operator)
    raise TypeError(
        f"{type(operator).__name__} is not an experience operator: subclass "
        "ExperienceOperatorV1 (or the legacy ExperienceOperator)"
    )
