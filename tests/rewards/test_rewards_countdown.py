"""countdown_reward and its safe equation evaluator."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from reinforge.rewards import CountdownReward
from reinforge.rewards.countdown_equation import InvalidEquationError, evaluate_equation
from reinforge.rewards.countdown_reward import parse_countdown_truth

TRUTH = json.dumps({"target": 24, "numbers": [1, 2, 3, 4]})
RIGHT = {"accuracy": 1.0, "format_score": 0.0}
WRONG = {"accuracy": 0.0, "format_score": 0.1}
NONE = {"accuracy": 0.0, "format_score": 0.0}


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("<think>try</think><answer>(1 + 2 + 3) * 4</answer>", RIGHT),
        ("<answer>1 * 2 * 3 * 4 = 24</answer>", RIGHT),
        ("so \\boxed{4 \\times 3 \\times 2 \\times 1}", RIGHT),
        ("<answer>4 × 3 × (2 × 1)</answer>", RIGHT),
        ("<answer>1+2+3+4</answer>", WRONG),  # wrong target
        ("<answer>(1+2)*4*2</answer>", WRONG),  # 2 reused, 3 unused
        ("<answer>(2+2)*3*2</answer>", WRONG),  # numbers not given
        ("<answer>2*3*4</answer>", WRONG),  # 1 unused
        ("<answer>1*2*3*4 = 25</answer>", WRONG),
        ("<answer>24</answer>", WRONG),
        ("<answer>4*3*2*1**1</answer>", WRONG),  # power is not allowed
        ("<answer>-1+2+3*4*...</answer>", WRONG),
        ("<answer>__import__('os').system('echo pwned')</answer>", WRONG),
        ("<answer>open('/etc/passwd').read()</answer>", WRONG),
        ("<answer>(lambda: 24)()</answer>", WRONG),
        ("<answer>4/(1-1)+2+3</answer>", WRONG),  # division by zero
        ("<answer>" + "(" * 500 + "1" + ")" * 500 + "</answer>", WRONG),
        ("I cannot find one.", NONE),
        ("<answer>  </answer>", NONE),
    ],
)
def test_countdown_reward(response: str, expected: dict[str, float]) -> None:
    assert CountdownReward()(response, TRUTH) == expected


def test_countdown_division_is_exact() -> None:
    truth = {"target": 6, "numbers": [6, 4, 4]}
    assert CountdownReward()("<answer>(6 / 4) * 4</answer>", truth) == RIGHT
    truth = {"target": 3, "numbers": [10, 3]}
    assert CountdownReward()("<answer>10 / 3</answer>", truth) == WRONG


def test_countdown_repeated_numbers_must_all_be_used() -> None:
    truth = {"target": 8, "numbers": [2, 2, 2]}
    assert CountdownReward()("<answer>2*2*2</answer>", truth) == RIGHT
    assert CountdownReward()("<answer>2*2+2+2</answer>", truth) == WRONG


def test_countdown_truth_from_raw_task_and_custom_scores() -> None:
    reward = CountdownReward(correct_score=2.0, format_score=0.5)
    row = {"target": 10, "nums": [5, 5]}
    assert reward("<answer>5+5</answer>", None, raw_task=row) == {
        "accuracy": 2.0,
        "format_score": 0.0,
    }
    assert reward("<answer>5*5</answer>", None, raw_task=row) == {
        "accuracy": 0.0,
        "format_score": 0.5,
    }


def test_parse_countdown_truth_rejects_bad_truth() -> None:
    assert parse_countdown_truth('{"target": "7", "numbers": ["3", 4]}') == (7, [3, 4])
    with pytest.raises(ValueError):
        parse_countdown_truth('{"numbers": [1]}')
    with pytest.raises(ValueError):
        parse_countdown_truth("[1, 2]")


def test_evaluate_equation() -> None:
    assert evaluate_equation("(1 + 2) * 3 / 4") == (Fraction(9, 4), [1, 2, 3, 4])
    for bad in ["", "x + 1", "1.5 + 2", "-1 + 2", "True + 1", "2 ** 3", "[1][0]", "1 if 1 else 2"]:
        with pytest.raises(InvalidEquationError):
            evaluate_equation(bad)
