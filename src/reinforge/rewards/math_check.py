"""Mathematical answer equivalence via math-verify, guarded by a timeout.

:func:`answers_match` is the pure check that runs inside a timeout worker (or
in-process when the timeout is off); it calls math-verify with its own
``signal``-based timeouts disabled, because those fail outside the main thread
and the worker's kill does the job. :func:`match_score` is what rewards call.
"""

from __future__ import annotations

import logging
from typing import Any

from math_verify import parse, verify

from reinforge.rewards.timeout import call_with_timeout

_ANCHORS = ("$", "\\boxed", "\\fbox", "\\(", "\\[")


class _DropTimeoutDisabledWarning(logging.Filter):
    """math-verify warns once that its timeouts are off; here that is by design."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Timeout is disabled")


for _name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_name).addFilter(_DropTimeoutDisabledWarning())


def parse_answer(answer: str) -> list[Any]:
    """Parse a bare answer such as ``42``, ``3/4``, ``\\frac{3}{4}`` or ``$x^2+1$``.

    Text without LaTeX delimiters is parsed as the content of a ``\\boxed{}``
    (math-verify only reads LaTeX inside delimiters); plain-text parsing is the
    fallback.
    """
    if any(anchor in answer for anchor in _ANCHORS):
        return parse(answer, parsing_timeout=None)
    return parse(f"\\boxed{{{answer}}}", parsing_timeout=None) or parse(
        answer, parsing_timeout=None
    )


def parse_response(response: str) -> list[Any]:
    """Parse a whole response, letting math-verify find the final answer in it."""
    return parse(response, parsing_timeout=None)


def answers_match(gold: str, prediction: str, prediction_is_answer: bool = True) -> bool:
    """True when ``prediction`` is mathematically equivalent to the reference ``gold``.

    ``prediction_is_answer`` says whether ``prediction`` is an extracted answer
    (parsed like ``gold``) or a full response (math-verify extracts the answer).
    """
    gold_parsed = parse_answer(gold)
    if not gold_parsed:
        return False
    predicted = parse_answer(prediction) if prediction_is_answer else parse_response(prediction)
    if not predicted:
        return False
    return bool(verify(gold_parsed, predicted, timeout_seconds=None))


def match_score(
    gold: str, prediction: str, *, prediction_is_answer: bool = True, timeout: float | None = 5.0
) -> float:
    """1.0 when the answers match, else 0.0; a timeout or a parse failure scores 0.0."""
    outcome = call_with_timeout(
        answers_match, (gold, prediction, prediction_is_answer), timeout=timeout
    )
    return 1.0 if outcome.ok and outcome.value else 0.0
