"""accuracy_reward, format_reward, math_reward and math_boxed_reward on hand-made responses."""

from __future__ import annotations

import threading

import pytest

from reinforge.rewards import AccuracyReward, FormatReward, MathBoxedReward, MathReward
from reinforge.rewards.math_check import answers_match, match_score


@pytest.mark.parametrize(
    ("response", "truth", "expected"),
    [
        ("So the answer is \\boxed{42}.", "42", 1.0),
        ("So the answer is \\boxed{42}.", "\\boxed{42}", 1.0),
        ("We get $\\frac{3}{4}$.", "$3/4$", 1.0),
        ("Final: \\boxed{0.75}", "\\frac{3}{4}", 1.0),
        ("\\boxed{\\frac{\\sqrt{3}}{2}}", "\\frac{\\sqrt3}{2}", 1.0),
        ("\\boxed{x^2 + 1}", "1 + x^2", 1.0),
        ("So the answer is \\boxed{41}.", "42", 0.0),
        ("We get $\\frac{2}{3}$.", "$3/4$", 0.0),
        ("}}{{ \\frac{ garbage $$", "42", 0.0),
        ("", "42", 0.0),
    ],
)
def test_accuracy_reward(response: str, truth: str, expected: float) -> None:
    assert AccuracyReward()(response, truth) == {"accuracy": expected}


def test_accuracy_reward_without_truth_or_with_unparseable_truth() -> None:
    assert AccuracyReward()("\\boxed{1}", None) == {"accuracy": 0.0}
    assert AccuracyReward()("\\boxed{1}", "}}{{") == {"accuracy": 0.0}


def test_accuracy_reward_in_process_and_from_a_thread() -> None:
    assert AccuracyReward(timeout=None)("\\boxed{42}", "42") == {"accuracy": 1.0}
    result: list[dict[str, float]] = []
    thread = threading.Thread(target=lambda: result.append(AccuracyReward()("\\boxed{7}", "7")))
    thread.start()
    thread.join(30)
    assert result == [{"accuracy": 1.0}]


def test_math_check_helpers() -> None:
    assert answers_match("3/4", "0.75")
    assert not answers_match("", "0.75")
    assert answers_match("5", "the result is \\boxed{5}", prediction_is_answer=False)
    assert match_score("2", "2", timeout=None) == 1.0


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("<think>reasoning</think>\n<answer>42</answer>", 0.1),
        ("  <think>multi\nline</think><answer>\n42\n</answer>\n", 0.1),
        ("<answer>42</answer>", -0.1),
        ("<think>a</think><answer>1</answer><answer>2</answer>", -0.1),
        ("<think>a</think><answer>1</answer> trailing text", -0.1),
        ("<think><think>a</think></think><answer>1</answer>", -0.1),
        ("just text", -0.1),
    ],
)
def test_format_reward_default_pattern(response: str, expected: float) -> None:
    assert FormatReward()(response) == {"format_score": expected}


def test_format_reward_custom_pattern_and_scores() -> None:
    reward = FormatReward(pattern=r".*\\boxed\{.+\}", correct_score=1.0, wrong_score=0.0)
    assert reward("so \\boxed{3}") == {"format_score": 1.0}
    assert reward("so 3") == {"format_score": 0.0}


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (
            "<think>1/2</think>\n<answer>\\frac{1}{2}</answer>",
            {"accuracy": 1.0, "format_score": 0.1},
        ),
        ("<think>x</think><answer>0.5</answer>", {"accuracy": 1.0, "format_score": 0.1}),
        ("<think>x</think><answer>1/3</answer>", {"accuracy": 0.0, "format_score": 0.1}),
        ("<think>x</think><answer></answer>", {"accuracy": 0.0, "format_score": 0.1}),
        ("It is \\boxed{\\frac{1}{{2}}}", {"accuracy": 1.0, "format_score": -0.1}),
        ("The answer is 1/2.", {"accuracy": 1.0, "format_score": -0.1}),
        ("<answer>}{ malformed", {"accuracy": 0.0, "format_score": -0.1}),
    ],
)
def test_math_reward(response: str, expected: dict[str, float]) -> None:
    assert MathReward()(response, "1/2") == expected


def test_math_reward_answer_pattern() -> None:
    reward = MathReward(answer_pattern=r"ANSWER: (\S+)")
    assert reward("ANSWER: 3 ... ANSWER: 4", "4")["accuracy"] == 1.0
    assert reward("ANSWER: 4 ... ANSWER: 3", "4")["accuracy"] == 0.0


@pytest.mark.parametrize(
    ("response", "has_think", "expected"),
    [
        ("so \\boxed{\\frac{\\sqrt{3}}{2}}", False, {"accuracy": 1.0, "format_score": 0.0}),
        ("so \\boxed{\\dfrac{3}{4}}", False, {"accuracy": 0.0, "format_score": 0.0}),
        ("so \\frac{\\sqrt{3}}{2}", False, {"accuracy": 0.0, "format_score": -0.1}),
        ("so \\boxed{\\frac{\\sqrt{3}}{2}", False, {"accuracy": 0.0, "format_score": -0.1}),
        (
            "<think>t</think> \\boxed{\\frac{\\sqrt3}{2}}",
            True,
            {"accuracy": 1.0, "format_score": 0.0},
        ),
        ("\\boxed{\\frac{\\sqrt3}{2}}", True, {"accuracy": 1.0, "format_score": -0.1}),
        ("<think>t</think> no box", True, {"accuracy": 0.0, "format_score": -0.1}),
    ],
)
def test_math_boxed_reward(response: str, has_think: bool, expected: dict[str, float]) -> None:
    assert MathBoxedReward(has_think=has_think)(response, "\\frac{\\sqrt{3}}{2}") == expected


def test_math_boxed_reward_options() -> None:
    reward = MathBoxedReward(format_score_coef=0.5, with_think=True)
    assert reward.has_think
    assert reward("no box", "1") == {"accuracy": 0.0, "format_score": -0.5}
    assert MathBoxedReward()("\\boxed{1}", None) == {"accuracy": 0.0, "format_score": 0.0}
