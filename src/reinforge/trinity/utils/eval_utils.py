"""Mirror of ``trinity.utils.eval_utils``: math-verify with a timeout, boxed-answer and
MATH-normalisation helpers, and TinyZero's countdown helpers (see
``reinforge.rewards.answer_normalize`` / ``countdown_helpers`` for what differs)."""

from reinforge.rewards.answer_normalize import compute_boxed_score as compute_score
from reinforge.rewards.answer_normalize import (
    find_boxed_answer,
    is_equiv,
    last_boxed_only_string,
    remove_boxed,
    remove_right_units,
)
from reinforge.rewards.countdown_helpers import (
    evaluate_equation,
    extract_solution,
    validate_equation,
    validate_think_pattern,
)
from reinforge.rewards.math_verify_calls import (
    ANS_RE,
    INVALID_ANS,
    parse_with_timeout,
    simple_answer_parser,
    verify_with_timeout,
)

__all__ = [
    "ANS_RE",
    "INVALID_ANS",
    "compute_score",
    "evaluate_equation",
    "extract_solution",
    "find_boxed_answer",
    "is_equiv",
    "last_boxed_only_string",
    "parse_with_timeout",
    "remove_boxed",
    "remove_right_units",
    "simple_answer_parser",
    "validate_equation",
    "validate_think_pattern",
    "verify_with_timeout",
]
