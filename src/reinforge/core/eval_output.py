"""What an rLLM Evaluator returns (``rllm.eval.types``, mirrored by re-export as
``reinforge.rllm.eval.types``): plain records, read by the AgentFlow runtime
(``reinforge.workflows.agentflow``).

``EvalOutput`` is the verdict on one episode: the scalar ``reward`` (what training
optimises), ``is_correct`` (what accuracy counts), named ``signals`` (sub-scores,
logged as metrics) and free ``metadata`` (its numbers are logged as metrics too).
``coerce_eval_output`` accepts the short forms ``@rllm.evaluator`` functions may
return instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EvalOutput", "EvalOutputError", "Signal", "coerce_eval_output"]


@dataclass
class Signal:
    """One named sub-score of an evaluation, e.g. ``Signal("format", 1.0)``."""

    name: str
    value: float
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class EvalOutput:
    """An Evaluator's verdict on one episode."""

    reward: float
    is_correct: bool
    signals: list[Signal] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


class EvalOutputError(TypeError):
    """An evaluator returned something that is not a verdict."""


def coerce_eval_output(result: Any, evaluator: str = "evaluator") -> EvalOutput:
    """An ``EvalOutput`` from what an evaluator returned.

    ``EvalOutput`` as is; a bool is reward 1.0 / 0.0; a number is the reward (correct
    when above 0); a pair is ``(reward, is_correct)``. Anything else, or a reward that
    is not a finite number, raises ``EvalOutputError`` naming ``evaluator``.
    """
    if isinstance(result, EvalOutput):
        reward, correct = result.reward, result.is_correct
    elif isinstance(result, bool):
        return EvalOutput(reward=1.0 if result else 0.0, is_correct=result)
    elif isinstance(result, int | float):
        reward, correct = result, float(result) > 0
    elif isinstance(result, tuple) and len(result) == 2:
        reward, correct = result
    else:
        raise EvalOutputError(
            f"{evaluator} returned a {type(result).__name__}; an evaluator returns an "
            "EvalOutput, a float reward, a bool, or a (reward, is_correct) pair"
        )
    if isinstance(reward, bool) or not isinstance(reward, int | float) or not math.isfinite(reward):
        raise EvalOutputError(f"{evaluator} gave the reward {reward!r}; it must be a finite number")
    if isinstance(result, EvalOutput):
        result.reward = float(reward)
        return result
    return EvalOutput(reward=float(reward), is_correct=bool(correct))
