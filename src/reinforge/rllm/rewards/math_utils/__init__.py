"""Mirror of ``rllm.rewards.math_utils``."""

from reinforge.rllm.rewards.math_utils.utils import (
    extract_answer,
    grade_answer_mathd,
    grade_answer_sympy,
)

__all__ = ["extract_answer", "grade_answer_mathd", "grade_answer_sympy"]
