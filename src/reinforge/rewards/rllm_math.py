"""rLLM's reward settings (``RewardConfig``, ``RewardType``) and its math reward's rule,
as plain functions; ``reinforge.rllm.rewards`` wraps them in rLLM's ``RewardOutput``."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from reinforge.rewards.answer_normalize import (
    extract_final_answer,
    grade_answer_mathd,
    grade_answer_sympy,
)

THOUGHT_DELIMITER_START = "<think>"
THOUGHT_DELIMITER_END = "</think>"


@dataclass
class RewardConfig:
    """The reward values and switches rLLM's reward functions read (rLLM's defaults)."""

    apply_format_reward: bool = False
    math_reward_weight: float = 1.0
    use_math_orm: bool = False
    code_reward_weight: float = 1.0
    cot_reward_weight: float = 0.0
    correct_reward: float = 1.0
    incorrect_reward: float = 0.0
    format_error_reward: float = 0.0
    unk_error_reward: float = 0.0
    toolcall_bonus: float = 0.5
    use_together_code_interpreter: bool = False


class RewardType(Enum):
    """The kind of problem a reward is for."""

    MATH = "MATH"
    CODE = "CODE"
    WEB = "WEB"
    UNK = "UNK"


def math_reward(
    config: RewardConfig, task_info: dict[str, Any], response: Any
) -> tuple[float, bool]:
    """``(reward, is_correct)`` of rLLM's math reward.

    The answer is read after ``</think>`` when the response has one (without it, a
    ``config.apply_format_reward`` gives ``format_error_reward``), from its last box;
    none, or an empty response, gives ``format_error_reward``. ``task_info["ground_truth"]``
    (one answer or a list; boxed ones are unboxed) missing gives ``unk_error_reward``.
    A match by :func:`grade_answer_mathd` or :func:`grade_answer_sympy` gives
    ``correct_reward`` (plus ``toolcall_bonus`` when ``task_info["has_toolcall"]``),
    else ``incorrect_reward``.
    """
    if not response:
        return config.format_error_reward, False
    response = str(response)
    if THOUGHT_DELIMITER_END in response:
        solution = response.split(THOUGHT_DELIMITER_END)[1]
    elif config.apply_format_reward:
        return config.format_error_reward, False
    else:
        solution = response
    answer = extract_final_answer(solution)
    if answer is None:
        return config.format_error_reward, False
    truths = task_info.get("ground_truth")
    if truths is None:
        return config.unk_error_reward, False
    if isinstance(truths, str | int | float):
        truths = [truths]
    usable = []
    for truth in truths:
        text = str(truth)
        if "\\boxed" in text:
            text = extract_final_answer(text)
        if text is not None:
            usable.append(text)
    if not usable:
        return config.unk_error_reward, False
    for truth in usable:
        if grade_answer_mathd(answer, truth) or grade_answer_sympy(answer, truth):
            bonus = config.toolcall_bonus if task_info.get("has_toolcall", False) else 0.0
            return config.correct_reward + bonus, True
    return config.incorrect_reward, False
