"""Trinity-RFT's ``AccuracyReward``: ``(response, prompt=None, truth=None) -> {"accuracy"}``."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from functools import partial
from typing import Any

from math_verify import parse, verify

from reinforge.rewards.math_check import match_score, parse_answer
from reinforge.rewards.reward_fn import RewardFn

logger = logging.getLogger(__name__)

_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>")


def simple_answer_parser(response: str) -> list[Any]:
    """The parsed answer of ``response``: its first ``<answer>...</answer>`` (on one line),
    else the whole text, read by math-verify."""
    tagged = _ANSWER_TAG.search(response)
    return parse_answer(tagged.group(1) if tagged else response)


class TrinityAccuracyReward(RewardFn):
    """1.0 when the response's answer equals ``truth`` (math-verify), else 0.0.

    Without ``answer_parser`` math-verify finds the answer in the whole response (a
    ``\\boxed{}`` first), checked in a worker under ``timeout``. With one, both the
    response and the truth go through the parser and the parsed values are compared
    in-process, as Trinity-RFT does; a parser or comparison that raises scores 0.0,
    with a WARNING naming the parser and the exception (a broken parser would
    otherwise look like a model that never answers right).
    """

    def __init__(
        self,
        answer_parser: Callable[[str], Any] | None = None,
        timeout: float | None = 5.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if answer_parser is parse:  # its signal-based timeout fails in the runners' threads
            answer_parser = partial(parse, parsing_timeout=None)
        self.answer_parser = answer_parser
        self.timeout = timeout

    def __call__(  # type: ignore[override]
        self, response: str, prompt: str | None = None, truth: str | None = None, **kwargs: Any
    ) -> dict[str, float]:
        if truth is None or not response:
            return {"accuracy": 0.0}
        if self.answer_parser is None:
            score = match_score(
                str(truth), response, prediction_is_answer=False, timeout=self.timeout
            )
            return {"accuracy": score}
        parser = getattr(self.answer_parser, "__qualname__", None) or repr(self.answer_parser)
        step = f"answer_parser {parser}"
        try:
            expected, given = self.answer_parser(str(truth)), self.answer_parser(response)
            step = f"comparing the answers answer_parser {parser} gave"
            # no signal-based timeout: off the main thread math-verify refuses one (the
            # reward worker pool bounds the call instead)
            score = float(verify(expected, given, timeout_seconds=None))
        except Exception as exc:  # a parser or a comparison failing is a wrong answer
            logger.warning(
                "%s raised %s: %s (truth %r, response %r); the response scores 0",
                step,
                type(exc).__name__,
                exc,
                str(truth)[:80],
                response[:80],
            )
            score = 0.0
        return {"accuracy": score}
