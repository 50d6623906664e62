"""The result of a guarded call: a value, a timeout, or an error.

Reward code must not crash a rollout because one response made a checker hang or
raise, so guarded calls report what happened as data and let the caller decide
(the built-in rewards score anything but ``ok`` as wrong). A hang is taken as
the response's doing (sympy spinning on a pathological expression) and scores 0.
A worker process that dies is not: it says nothing about the answer, so the pool
retries the call once and then raises ``RewardWorkerCrashed``, failing the task
with the reason; callers never see a ``"crashed"`` outcome.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

#: "crashed": the worker process died during the call (the pool retries it, then raises)
CallStatus = Literal["ok", "timeout", "error", "crashed"]


@dataclass(frozen=True)
class CallOutcome:
    """What a call guarded by :func:`reinforge.rewards.timeout.call_with_timeout` gave.

    ``value`` is the function's return value when ``status == "ok"``; ``error`` is a
    readable description (a traceback for exceptions) otherwise.
    """

    status: CallStatus
    value: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def timed_out(self) -> bool:
        return self.status == "timeout"

    def value_or(self, default: Any) -> Any:
        """The value when the call succeeded, else ``default``."""
        return self.value if self.ok else default
