"""Mirror of ``trinity.utils.math_eval_utils`` (Trinity-RFT's Qwen2.5-Math answer check):
``verify_math_answer``, ``extract_answer``, ``strip_string``, ``math_equal``.

The functions keep upstream's parameter names, so calls by keyword work as they do in
Trinity-RFT (its ``MathEvalWorkflow`` calls
``verify_math_answer(response_text=..., ground_truth=...)``).
"""

from typing import Any

from reinforge.rewards import answer_normalize as _normalize
from reinforge.rewards.answer_normalize import math_equal

__all__ = ["extract_answer", "math_equal", "strip_string", "verify_math_answer"]


def verify_math_answer(response_text: str, ground_truth: Any) -> tuple[float, dict[str, Any]]:
    """``(1.0 or 0.0, details)``: the answers found in the response and the ground truth compared."""
    return _normalize.verify_math_answer(response_text, ground_truth)


def extract_answer(response_text: Any) -> str | None:
    """The last box (normalised), else the stated answer, else the last number."""
    return _normalize.extract_math_answer(response_text)


def strip_string(input_str: Any) -> str | None:
    """Qwen2.5-Math's answer normalisation; None for nothing left."""
    return _normalize.strip_string(input_str)
