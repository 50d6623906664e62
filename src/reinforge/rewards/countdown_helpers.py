"""The countdown helpers of TinyZero's reward, under the names Trinity-RFT's
``trinity.utils.eval_utils`` and rLLM's ``rllm.rewards.countdown_reward`` give them.

The equation is never handed to ``eval``: it is evaluated by
``reinforge.rewards.countdown_equation`` (integers, ``+ - * /``, parentheses; a unary
minus is refused there, where TinyZero's ``eval`` takes it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from reinforge.rewards.countdown_equation import InvalidEquationError
from reinforge.rewards.countdown_equation import evaluate_equation as _exact_value

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def _last_answer(text: str) -> str | None:
    found = _ANSWER.findall(text)
    return found[-1].strip() if found else None


def extract_solution(solution_str: str) -> str | None:
    """Trinity-RFT's form: the last ``<answer>...</answer>`` on the reply's last line."""
    return _last_answer(solution_str.split("\n")[-1])


def extract_solution_after_assistant(solution_str: str) -> str | None:
    """rLLM's form: the last ``<answer>...</answer>`` after the first ``Assistant:`` (or
    ``<|im_start|>assistant``), anywhere in the text."""
    for marker in ("Assistant:", "<|im_start|>assistant"):
        if marker in solution_str:
            solution_str = solution_str.split(marker, 1)[1]
            break
    return _last_answer(solution_str)


def validate_equation(equation_str: str, available_numbers: Iterable[Any]) -> bool:
    """Whether the integers written in ``equation_str`` are exactly ``available_numbers``
    (each once, any order)."""
    try:
        used = sorted(int(n) for n in re.findall(r"\d+", equation_str))
        return used == sorted(int(n) for n in available_numbers)
    except (TypeError, ValueError):
        return False


def evaluate_equation(equation_str: str) -> float | None:
    """The value of an arithmetic expression of integers, ``+ - * /`` and parentheses;
    None for anything else (or a division by zero)."""
    if not re.fullmatch(r"[\d+\-*/().\s]+", equation_str or ""):
        return None
    try:
        value, _ = _exact_value(equation_str)
    except InvalidEquationError:
        return None
    return float(value)


def validate_think_pattern(text: str) -> bool:
    """Exactly one ``<think>`` and one ``</think>``, in that order."""
    if text.count("<think>") != 1 or text.count("</think>") != 1:
        return False
    return text.find("<think>") < text.find("</think>")


def countdown_score(
    solution: str,
    ground_truth: Mapping[str, Any],
    method: str = "strict",
    format_score: float = 0.1,
    score: float = 1.0,
    after_assistant: bool = True,
) -> float:
    """TinyZero's countdown score: 0 without an ``<answer>``; ``format_score`` for an
    equation that uses the wrong numbers, cannot be evaluated or misses ``target``;
    ``score`` when it hits ``ground_truth["target"]`` with ``ground_truth["numbers"]``.
    ``method`` is accepted as upstream does and unused."""
    extract = extract_solution_after_assistant if after_assistant else extract_solution
    equation = extract(solution)
    if equation is None:
        return 0.0
    if not validate_equation(equation, ground_truth["numbers"]):
        return format_score
    value = evaluate_equation(equation)
    if value is None or abs(value - float(ground_truth["target"])) >= 1e-5:
        return format_score
    return score
