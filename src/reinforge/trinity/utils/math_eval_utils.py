"""Mirror of ``trinity.utils.math_eval_utils`` (Trinity-RFT's Qwen2.5-Math answer check):
``verify_math_answer``, ``extract_answer``, ``strip_string``, ``math_equal``."""

from reinforge.rewards.answer_normalize import extract_math_answer as extract_answer
from reinforge.rewards.answer_normalize import math_equal, strip_string, verify_math_answer

__all__ = ["extract_answer", "math_equal", "strip_string", "verify_math_answer"]
