"""Answer extraction shared by the built-in rewards."""

from __future__ import annotations

import pytest

from reinforge.rewards.extract import (
    extract_answer,
    has_single_think_block,
    last_boxed,
    last_tagged,
    strip_thinking,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("so \\boxed{42}.", "42"),
        ("\\boxed{1} then \\boxed{2}", "2"),
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed{\\frac{\\sqrt{3}}{{2}}}", "\\frac{\\sqrt{3}}{{2}}"),
        ("\\boxed{\\{1, 2\\}}", "\\{1, 2\\}"),
        ("\\fbox{7}", "7"),
        ("$\\boxed 5$", "5"),
        ("no box here", None),
        ("cut off \\boxed{\\frac{1}{2}", None),
        ("\\boxed", None),
    ],
)
def test_last_boxed(text: str, expected: str | None) -> None:
    assert last_boxed(text) == expected


def test_last_tagged_takes_last_block() -> None:
    assert last_tagged("<answer> 1 </answer> and <answer>2</answer>") == "2"
    assert last_tagged("<answer>open only") is None
    assert last_tagged("closed only</answer>") is None
    assert last_tagged("<think>a</think>", "think") == "a"


def test_extract_answer_prefers_tags_then_boxed() -> None:
    assert extract_answer("\\boxed{1} <answer>2</answer>") == "2"
    assert extract_answer("<answer>so \\boxed{3}</answer>") == "3"
    assert extract_answer("thinking... \\boxed{4}") == "4"
    assert extract_answer("plain text 5") is None


def test_think_helpers() -> None:
    assert has_single_think_block("<think>a</think> b")
    assert not has_single_think_block("</think><think>")
    assert not has_single_think_block("<think>a</think><think>b</think>")
    assert not has_single_think_block("no think")
    assert strip_thinking("<think>a</think>  answer ") == "answer"
    assert strip_thinking(" answer ") == "answer"
