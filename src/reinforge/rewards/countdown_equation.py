"""Safe evaluation of countdown equations: integers, ``+ - * /`` and parentheses only.

The equation comes from a model, so it is never handed to ``eval``: it is parsed
with :mod:`ast` and walked by hand, and any node other than an integer literal
or one of the four binary operators is rejected (names, calls, attributes,
``**``, unary minus, floats). Arithmetic is exact (:class:`fractions.Fraction`),
so ``(6/4)*4 == 6`` holds without float tolerance.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from fractions import Fraction

MAX_EQUATION_CHARS = 300
"""Longer input is rejected before parsing; no fair countdown equation is this long."""

_OPERATORS: dict[type[ast.operator], Callable[[Fraction, Fraction], Fraction]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_SYMBOL_ALIASES = {"×": "*", "·": "*", "÷": "/", "−": "-", "\\times": "*", "\\div": "/"}


class InvalidEquationError(ValueError):
    """The text is not an equation of the allowed form, or cannot be evaluated."""


def normalize_equation(text: str) -> str:
    """Map common typeset symbols (``×``, ``÷``, ``\\times``) to ASCII operators."""
    for symbol, ascii_op in _SYMBOL_ALIASES.items():
        text = text.replace(symbol, ascii_op)
    return text.strip()


def evaluate_equation(text: str) -> tuple[Fraction, list[int]]:
    """Return the exact value of ``text`` and the integers it uses, in order.

    Raises:
        InvalidEquationError: for anything but integers, ``+ - * /`` and
            parentheses, and for division by zero.
    """
    text = normalize_equation(text)
    if not text or len(text) > MAX_EQUATION_CHARS:
        raise InvalidEquationError("empty or overlong equation")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        raise InvalidEquationError(f"not an arithmetic expression: {exc}") from exc
    numbers: list[int] = []
    value = _evaluate(tree.body, numbers)
    return value, numbers


def _evaluate(node: ast.expr, numbers: list[int]) -> Fraction:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        numbers.append(node.value)
        return Fraction(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left = _evaluate(node.left, numbers)
        right = _evaluate(node.right, numbers)
        try:
            return _OPERATORS[type(node.op)](left, right)
        except ZeroDivisionError as exc:
            raise InvalidEquationError("division by zero") from exc
    raise InvalidEquationError(f"disallowed element: {ast.dump(node)[:60]}")
