"""``calculator_agent_workflow``: answer big-number arithmetic by calling a calculator tool.

The question ("What is 48213 * 737?") is beyond what a small model computes in its
head; the ``calculator`` tool (``workflows/calculator.py``) makes it easy. The agent
is plain OpenAI SDK code over the rollout model's client: it asks the question with
the tool on offer, runs each tool call it gets back and returns the result as a
``tool`` message, and stops at the first reply with no tool call, which is the
answer. At most ``max_turns`` model calls (``workflow_args.max_turns``, default 3).

Reward = task success: 1 when the last integer of the final reply equals the row's
answer, else 0. A run that goes wrong scores 0 and says why: ``tool_call_invalid``
(a ``<tool_call>`` that is not valid JSON, an unknown tool, bad arguments) or
``no_answer`` (a final reply with no number, or out of turns), with the reason in
``info["invalid_reason"]``.

Experiences come from the rollout model's history (``enable_history: true``), one per
conversation: both replies' sampled tokens are trained on, the tool result between
them is masked out. If a conversation cannot be bridged token-exactly (a chat
template that rewrites earlier turns), each turn stays its own experience and every
one of them gets the run's reward, as ``email_search_workflow`` does.

``demonstration`` writes the conversation a correct agent has, with the same
system prompt and tool schema, for supervised warm starts (``examples/agent``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from reinforge.core import Experience, Task
from reinforge.workflows.calculator import (
    CALCULATOR_TOOL,
    TOOL_NAME,
    call_calculator,
    evaluate_expression,
)
from reinforge.workflows.step_wise import require_history
from reinforge.workflows.workflow import WORKFLOWS, Workflow

SYSTEM_PROMPT = (
    "You are a calculator assistant. Call the calculator with the arithmetic expression, "
    "then reply with just the number it returns."
)

_INTEGER = re.compile(r"-?\d[\d,]*")


def opening_messages(question: str, system_prompt: str = SYSTEM_PROMPT) -> list[dict[str, Any]]:
    """The conversation the agent starts from (the tools travel beside it, as ``tools=``)."""
    return [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": question},
    ]


def final_number(reply: str) -> str | None:
    """The last integer in a reply, thousands separators removed (None if it has none)."""
    found = _INTEGER.findall(reply)
    return found[-1].replace(",", "") if found else None


def demonstration(
    question: str, expression: str, system_prompt: str = SYSTEM_PROMPT, call_id: str = "call_0"
) -> dict[str, Any]:
    """A correct agent's conversation as an OpenAI ``messages`` list with its ``tools``."""
    result = str(evaluate_expression(expression))
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": TOOL_NAME, "arguments": json.dumps({"expression": expression})},
    }
    return {
        "messages": [
            *opening_messages(question, system_prompt),
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": result},
            {"role": "assistant", "content": result},
        ],
        "tools": [CALCULATOR_TOOL],
    }


@dataclass
class AgentRun:
    """What happened in one conversation, before scoring."""

    turns: int = 0
    tool_calls: int = 0
    answer: str | None = None
    invalid_call: str | None = None
    no_answer: str | None = None


@WORKFLOWS.register_module("calculator_agent_workflow")
class CalculatorAgentWorkflow(Workflow):
    """One conversation per run: call the calculator, read the result, answer."""

    is_async = True
    can_reset = True

    def __init__(self, *, task: Task, model: Any, auxiliary_models: list[Any] | None = None):
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        require_history(model, type(self).__name__)
        self.client = model.get_openai_async_client()
        self.reset(task)

    def reset(self, task: Task) -> None:
        self.task = task
        row = task.raw_task or {}
        # the taskset's format names the fields; rows written by examples/agent/make_data.py
        # work without one (FormatConfig's defaults are "prompt" and "response")
        question_key, answer_key = (
            configured if configured in row else default
            for configured, default in (
                (task.format_args.prompt_key, "question"),
                (task.format_args.response_key, "answer"),
            )
        )
        missing = [k for k in (question_key, answer_key) if k not in row]
        if missing:
            raise ValueError(
                f"task {task.task_id!r}: row lacks {missing} (keys: {sorted(row)}); "
                "calculator_agent_workflow needs a question and its integer answer"
            )
        self.question = str(row[question_key])
        self.answer = str(row[answer_key]).strip()
        args = task.workflow_args or {}
        self.max_turns = int(args.get("max_turns", 3))
        if self.max_turns < 1:
            raise ValueError(f"task {task.task_id!r}: workflow_args.max_turns must be >= 1")
        self.system_prompt = task.format_args.system_prompt or SYSTEM_PROMPT
        self.rollout_args = task.rollout_args

    async def _ask(self, messages: list[dict[str, Any]]) -> Any:
        args = self.rollout_args
        response = await self.client.chat.completions.create(
            model=self.client.model_path,
            messages=messages,
            tools=[CALCULATOR_TOOL],
            temperature=args.temperature,
            top_p=args.top_p,
            max_tokens=args.max_tokens,
            seed=args.seed,
            stop=args.stop or None,
            extra_body={"top_k": args.top_k},
        )
        return response.choices[0].message

    async def _converse(self) -> AgentRun:
        run = AgentRun()
        messages = opening_messages(self.question, self.system_prompt)
        while run.turns < self.max_turns:
            message = await self._ask(messages)
            run.turns += 1
            text = message.content or ""
            calls = message.tool_calls or []
            if not calls:
                if "<tool_call>" in text:
                    run.invalid_call = f"malformed tool call: {text[:200]!r}"
                elif (number := final_number(text)) is None:
                    run.no_answer = f"the final reply has no number: {text[:200]!r}"
                else:
                    run.answer = number
                return run
            messages.append(
                {
                    "role": "assistant",
                    "content": text,
                    "tool_calls": [c.model_dump() for c in calls],
                }
            )
            for call in calls:
                run.tool_calls += 1
                outcome = call_calculator(call.function.name, call.function.arguments)
                if not outcome.ok:
                    run.invalid_call = outcome.error
                    return run
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": outcome.result}
                )
        run.no_answer = f"still calling tools after {self.max_turns} turns"
        return run

    async def run_async(self) -> list[Experience]:
        self.model.extract_experience_from_history()  # start from a clean history
        run = await self._converse()
        correct = run.answer is not None and run.answer == self.answer
        reward = float(correct)
        metrics = {
            "accuracy": reward,
            "used_tool": float(run.tool_calls > 0),
            "tool_calls": float(run.tool_calls),
            "agent_turns": float(run.turns),
            "tool_call_invalid": float(run.invalid_call is not None),
            "no_answer": float(run.no_answer is not None),
        }
        exps = self.model.extract_experience_from_history(shape="conversation")
        for step, exp in enumerate(exps):
            exp.eid.step = step
            exp.reward = reward
            exp.metrics.update(metrics)
            exp.info["final_answer"] = run.answer
            reason = run.invalid_call or run.no_answer
            if reason is not None:
                exp.info["invalid_reason"] = reason
        return exps
