"""An arithmetic agent written with AgentScope, as its authors would write it, plus the
entry points reinforge's AgentScope adapters call.

* ``solve(raw_task, chat_model) -> float``: for ``agentscope_workflow_adapter``.
* ``solve_v1(task, model, logger) -> WorkflowOutput`` and
  ``judge(task, response) -> JudgeOutput``: for ``agentscope_workflow_adapter_v1``.

The agent is AgentScope's ReAct ``Agent`` with one tool, a calculator, and a
structured final answer. Nothing here knows about reinforge except the two output
types (AgentScope 2.0 has no tuner package to import them from).
"""

from __future__ import annotations

import ast
import operator
import re
from typing import Any

from agentscope.agent import Agent, InjectionConfig, ReActConfig
from agentscope.message import UserMsg
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, Toolkit
from pydantic import BaseModel, Field

from reinforge.workflows.agentscope import JudgeOutput, WorkflowOutput

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression with +, - and * on integers.

    Args:
        expression (str): The expression, e.g. "14 - 2".
    """

    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](value(node.left), value(node.right))
        raise ValueError("only integers with +, - and * are supported")

    try:
        return str(value(ast.parse(expression, mode="eval").body))
    except (SyntaxError, ValueError) as exc:
        return f"Error: {exc}"


class Answer(BaseModel):
    answer: str = Field(description="The final answer, a number only")


def build_agent(model: Any) -> Agent:
    tool = FunctionTool(
        calculate,
        permission=PermissionDecision(behavior=PermissionBehavior.ALLOW, message="safe"),
    )
    return Agent(
        name="calculator_agent",
        system_prompt="Answer the arithmetic question. Use the calculate tool to compute.",
        model=model,
        toolkit=Toolkit(tools=[tool]),
        react_config=ReActConfig(max_iters=3),
        injection_config=InjectionConfig(inject_runtime_state=False),
    )


async def answer(question: str, model: Any) -> str:
    reply = await build_agent(model).reply(
        UserMsg(name="user", content=question), structured_schema=Answer
    )
    structured = reply.structured_output or {}
    return str(structured.get("answer", reply.get_text_content() or ""))


def is_right(response: str, truth: Any) -> bool:
    numbers = re.findall(r"-?\d+", response)
    return bool(numbers) and numbers[-1] == str(truth).strip()


async def solve(raw_task: dict, chat_model: Any) -> float:
    """The V0 adapter's entry: the reward of one run."""
    return float(is_right(await answer(raw_task["question"], chat_model), raw_task["answer"]))


async def solve_v1(task: dict, model: Any, logger: Any) -> WorkflowOutput:
    """The V1 adapter's entry: the response, scored by ``judge``."""
    response = await answer(task["question"], model)
    logger.debug("question %r answered %r", task["question"], response)
    return WorkflowOutput(response=response, metrics={"answer_chars": len(response)})


async def judge(task: dict, response: str) -> JudgeOutput:
    right = is_right(response, task["answer"])
    return JudgeOutput(reward=float(right), metrics={"judged_right": float(right)})
