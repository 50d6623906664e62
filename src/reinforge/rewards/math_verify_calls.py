"""math-verify's ``parse`` and ``verify`` with a time limit, under the names Trinity-RFT's
``eval_utils`` gives them (``parse_with_timeout``, ``verify_with_timeout``).

Each runs in reinforge's reward worker (``reinforge.rewards.timeout``), so an expression
that hangs sympy is stopped; running past the limit raises ``TimeoutError``, as upstream.
"""

from __future__ import annotations

import re
from typing import Any

from math_verify import parse, verify

from reinforge.rewards.timeout import call_with_timeout
from reinforge.rewards.trinity_style.accuracy import simple_answer_parser

#: GSM8K's final-answer marker (``#### 42``) and the value upstream uses for "none found"
ANS_RE = re.compile(r"#### (\-?[0-9\.\,]+)")
INVALID_ANS = "[invalid]"


def _parse(pred: str, kwargs: dict[str, Any]) -> list[Any]:
    return parse(pred, parsing_timeout=None, **kwargs)


def _verify(gold: Any, target: Any, kwargs: dict[str, Any]) -> bool:
    return bool(verify(gold, target, timeout_seconds=None, **kwargs))


def _run(func: Any, args: tuple[Any, ...], timeout: float | None, what: str) -> Any:
    outcome = call_with_timeout(func, args, timeout=timeout)
    if outcome.timed_out:
        raise TimeoutError(f"{what} timed out")
    if not outcome.ok:
        raise RuntimeError(f"{what} failed: {outcome.error}")
    return outcome.value


def parse_with_timeout(pred: str, parsing_timeout: float = 5, **kwargs: Any) -> list[Any]:
    """``math_verify.parse(pred, **kwargs)``, stopped after ``parsing_timeout`` seconds."""
    return _run(_parse, (pred, kwargs), parsing_timeout, "Parsing")


def verify_with_timeout(gold: Any, target: Any, timeout_seconds: float = 5, **kwargs: Any) -> bool:
    """``math_verify.verify(gold, target, **kwargs)``, stopped after ``timeout_seconds``."""
    return _run(_verify, (gold, target, kwargs), timeout_seconds, "Verification")


__all__ = [
    "ANS_RE",
    "INVALID_ANS",
    "parse_with_timeout",
    "simple_answer_parser",
    "verify_with_timeout",
]
