"""Mirror of ``rllm.rewards.math_utils.utils``: answer extraction and grading (values are
compared with math-verify where rLLM uses sympy; see ``reinforge.rewards.answer_normalize``)."""

from reinforge.rewards.answer_normalize import (
    extract_boxed_answer,
    grade_answer_mathd,
    grade_answer_sympy,
    grade_answer_verl,
    last_boxed_only_string,
    mathd_normalize_answer,
    remove_boxed,
)
from reinforge.rewards.answer_normalize import extract_final_answer as extract_answer

__all__ = [
    "extract_answer",
    "extract_boxed_answer",
    "grade_answer_mathd",
    "grade_answer_sympy",
    "grade_answer_verl",
    "last_boxed_only_string",
    "mathd_normalize_answer",
    "remove_boxed",
]
