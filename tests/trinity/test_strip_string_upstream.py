"""The mirror's ``strip_string`` gives what Trinity-RFT's gives, quirks included.

Upstream's function is the same in 0.3.0 (``trinity.utils.math_eval_utils``) and 0.6.0
(``trinity.common.rewards.qwen25_eval``); each expected value below is what those
releases return for the input (read by running them). ``eval_utils.is_equiv`` and
``compute_score`` compare answers through it, so a difference here changes rewards:
``\\boxed{10\\%}`` against ``10`` scores 0 upstream (``10\\`` is not ``10``).
"""

from __future__ import annotations

import pytest

from reinforge.trinity.common.rewards.qwen25_eval import strip_string as strip_060
from reinforge.trinity.utils.eval_utils import compute_score, is_equiv
from reinforge.trinity.utils.math_eval_utils import strip_string

UPSTREAM = [
    ("10\\%", "10\\"),  # the bare % goes first, leaving \\%'s backslash
    ("10%", "10"),
    ("x = 7", "7"),
    ("(1, 2)", "1,2"),
    ("\\dfrac12", "\\frac{1}{2}"),
    ("-3/4", "\\frac{-3}{4}"),
    ("03/4", "03/4"),  # not an integer as Python writes one back
    ("\\sqrt2/2", "\\frac{\\sqrt{2}}{2}"),
    ("two hundred and five", "205"),  # word2number
    ("five apples", "5"),
    ("010", "10"),
    ("\\infty", "\\\\inftyty"),  # "inf" inside "\\infty" is replaced again
    ("-inf", "-\\infty"),
    ("\\text{5 dollars}", "5dollars"),
    ("12 apples", "12"),
    ("rs. 50", "0.50"),  # "rs ." is a unit regex: its "." matches any character
    ("a . m", None),
    ("100.00", "100"),
    ("2.50", "2.50"),
    ("\\begin{array}{cc} 1 & 2 \\end{array}", "\\begin{pmatrix}1&2\\end{pmatrix}"),
    ("\\left( 1,2 \\right)", "1,2"),
    ("\\mbox{hello}3", "3"),
    ("y=2x+1", "2x+1"),
    ("No change", "Nochange"),
    ("\t", None),
    (3.0, "3"),
    (None, None),
]


@pytest.mark.parametrize(("raw", "expected"), UPSTREAM)
def test_strip_string_matches_upstream(raw: object, expected: str | None) -> None:
    assert strip_string(input_str=raw) == expected
    assert strip_060(raw) == expected  # 0.6.0's module path, the same function


def test_word2number_errors_other_than_value_error_propagate_as_upstream() -> None:
    # w2n reads "thousand five" as a thousand of nothing: IndexError, not caught upstream
    with pytest.raises(IndexError):
        strip_string("thousand five")


def test_a_percent_sign_changes_the_score_as_upstream() -> None:
    assert compute_score("\\boxed{10\\%}", "10") == 0.0
    assert not is_equiv("10\\%", "10")
    assert compute_score("\\boxed{10%}", "10") == 1.0
    assert compute_score("The final answer is $\\boxed{2\\sqrt{2}}$", "2\\sqrt{2}") == 1.0
    assert compute_score("\\boxed{x = 7}", "7") == 1.0
