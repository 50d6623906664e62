"""rLLM helper modules of the mirror: ``rllm.globals`` beside the package's lazy names,
and the math reward on rLLM's rules."""

from __future__ import annotations

import importlib


def test_the_globals_module_does_not_hide_the_lazy_names() -> None:
    importlib.import_module("reinforge.rllm.globals")
    import reinforge.rllm as rllm

    assert callable(rllm.rollout) and rllm.Action is not None
    assert "Action" in dir(rllm)


def test_math_reward_fn_follows_rllm() -> None:
    from reinforge.rllm.rewards.math_reward import RewardMathFn
    from reinforge.rllm.rewards.math_utils import grade_answer_mathd, grade_answer_sympy
    from reinforge.rllm.rewards.reward_fn import math_reward_fn
    from reinforge.rllm.rewards.reward_types import RewardConfig

    assert math_reward_fn(
        {"ground_truth": "\\frac{1}{2}"}, "<think>x</think> \\boxed{0.5}"
    ).is_correct
    assert math_reward_fn({"ground_truth": "3"}, "\\boxed{4}").reward == 0.0
    strict = RewardMathFn(RewardConfig(apply_format_reward=True, format_error_reward=-1.0))
    assert strict({"ground_truth": "3"}, "\\boxed{3}").reward == -1.0  # no </think>
    assert grade_answer_mathd("\\dfrac{1}{2}", "0.5")
    assert not grade_answer_sympy("\\sqrt{4}", "2")  # an integer answer must be an integer
    assert grade_answer_sympy("(1,2)", "(1, 2)") and not grade_answer_sympy("[1,2]", "(1,2)")
