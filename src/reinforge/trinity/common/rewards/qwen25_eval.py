"""Mirror of ``trinity.common.rewards.qwen25_eval`` (newer Trinity-RFT's home of the
Qwen2.5-Math answer check that ``trinity.utils.math_eval_utils`` held)."""

from reinforge.trinity.utils.math_eval_utils import (
    extract_answer,
    math_equal,
    strip_string,
    verify_math_answer,
)

__all__ = ["extract_answer", "math_equal", "strip_string", "verify_math_answer"]
