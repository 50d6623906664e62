"""The ``calculator`` tool: integer arithmetic an agent calls instead of computing in its head.

A small model cannot multiply six-digit numbers, but it can learn to hand the
expression to a tool and copy the result. The tool takes one argument,
``expression`` (integers, ``+ - *`` and parentheses), and returns the value as
text. Every way a call can go wrong (an unknown tool, arguments that are not a JSON
object, a missing or unreadable expression) is a ``CalculatorCall`` with an
``error`` naming what was wrong, never an exception, so the agent loop can record it.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from typing import Any

TOOL_NAME = "calculator"

CALCULATOR_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": "Evaluate an integer arithmetic expression with + - * and parentheses",
        "parameters": {
            "type": "object",
            "properties": {
                "expression": {"type": "string", "description": "for example 1234 * 567"}
            },
            "required": ["expression"],
        },
    },
}

#: longest expression accepted: a guard against a model writing a page of digits
MAX_EXPRESSION_CHARS = 200
_OPERATORS = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__}


@dataclass(frozen=True)
class CalculatorCall:
    """The outcome of one tool call: the result text, or why the call was invalid."""

    result: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _value(node: ast.AST) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _value(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_value(node.left), _value(node.right))
    raise ValueError(f"only integers, + - * and parentheses are allowed, not {ast.unparse(node)!r}")


def evaluate_expression(expression: str) -> int:
    """The value of an integer expression; ``ValueError`` naming what it cannot read."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ValueError(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    # thousands separators are how people (and models) often write numbers
    text = expression.replace(",", "").replace("×", "*").strip()
    if not text:
        raise ValueError("empty expression")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an arithmetic expression: {expression!r}") from exc
    return _value(tree.body)


def call_calculator(name: str | None, arguments: str | dict[str, Any] | None) -> CalculatorCall:
    """Run a tool call as the model made it (``arguments`` as the JSON text it wrote)."""
    if name != TOOL_NAME:
        return CalculatorCall(error=f"unknown tool {name!r} (the only tool is {TOOL_NAME!r})")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except ValueError:
            return CalculatorCall(error=f"arguments are not JSON: {arguments[:100]!r}")
    if not isinstance(arguments, dict):
        return CalculatorCall(error="arguments must be a JSON object")
    expression = arguments.get("expression")
    if not isinstance(expression, str | int) or isinstance(expression, bool):
        return CalculatorCall(error=f"bad arguments {arguments!r}: needs a string 'expression'")
    try:
        return CalculatorCall(result=str(evaluate_expression(str(expression))))
    except ValueError as exc:
        return CalculatorCall(error=f"bad expression: {exc}")
