"""Mirror of ``rllm.rewards.countdown_reward``: ``countdown_reward_fn`` over reinforge's
countdown checker.

rLLM's countdown tasks carry ``target`` and ``nums``; the reward is 1.0 for an equation
that uses each number once and hits the target, else 0.0 (rLLM gives no partial
credit here), with ``is_correct`` to match.
"""

from __future__ import annotations

from typing import Any

from reinforge.rewards import CountdownReward
from reinforge.rewards.countdown_helpers import (
    countdown_score,
    evaluate_equation,
    extract_solution_after_assistant,
    validate_equation,
)
from reinforge.workflows.episode.reward_output import RewardOutput

_CHECKER = CountdownReward()

extract_solution = extract_solution_after_assistant


def compute_score(
    solution_str: str,
    ground_truth: dict,
    method: str = "strict",
    format_score: float = 0.1,
    score: float = 1.0,
) -> float:
    """TinyZero's countdown score, as rLLM's ``compute_score``: 0 without an
    ``<answer>``, ``format_score`` for a wrong one, ``score`` for a right one."""
    return countdown_score(solution_str, ground_truth, method, format_score, score)


def countdown_reward_fn(task_info: dict, action: Any) -> RewardOutput:
    """Score a countdown equation (``<answer>`` or ``\\boxed{}``) against the task."""
    response = getattr(action, "action", action)
    numbers = task_info.get("nums", task_info.get("numbers"))
    if task_info.get("target") is None or numbers is None:
        return RewardOutput(
            reward=0.0, is_correct=False, metadata={"error": "Missing target or nums"}
        )
    components = _CHECKER(
        "" if response is None else str(response),
        truth={"target": task_info["target"], "numbers": list(numbers)},
    )
    correct = components["accuracy"] > 0
    return RewardOutput(reward=1.0 if correct else 0.0, is_correct=correct, metadata=components)


__all__ = [
    "compute_score",
    "countdown_reward_fn",
    "evaluate_equation",
    "extract_solution",
    "validate_equation",
]
