"""``tool_call_workflow``: choose the right tool and arguments, written against the OpenAI SDK.

Each task is a request, the tools on offer (OpenAI function schemas) and the call
that serves it. The agent is plain OpenAI client code: it asks the policy for
``repeat_times`` replies with ``tools=``; the policy answers in its own tool-call
format, which the API turns into structured ``tool_calls``. The experiences come
from the rollout model's history, so they hold exactly the sampled tokens.

Reward per reply, out of 1: 0.5 for calling the expected tool (the first call made)
and 0.5 more for passing exactly the expected arguments. A reply with no call, a
wrong tool, or a malformed call (recorded in ``info["tool_call_error"]``) scores 0.

Row fields (names configurable via ``workflow_args``): ``question``, ``tools`` and
``answer`` = ``{"name": ..., "arguments": {...}}``.
"""

from __future__ import annotations

import json
from typing import Any

from reinforge.core import Experience, Task
from reinforge.workflows.step_wise import require_history
from reinforge.workflows.workflow import WORKFLOWS, Workflow

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant that answers by calling exactly one of the available "
    "functions with the right arguments."
)


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().lower() == b.strip().lower()
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def score_tool_call(
    tool_calls: list[dict[str, Any]] | None, expected: dict[str, Any]
) -> dict[str, float]:
    """Reward components of one reply's tool calls against the expected call."""
    if not tool_calls:
        return {"tool_name": 0.0, "tool_arguments": 0.0}
    fn = tool_calls[0].get("function", {})
    if fn.get("name") != expected["name"]:
        return {"tool_name": 0.0, "tool_arguments": 0.0}
    try:
        args = json.loads(fn.get("arguments") or "{}")
    except ValueError:
        args = None
    ok = _same_value(args, expected.get("arguments", {}))
    return {"tool_name": 0.5, "tool_arguments": 0.5 if ok else 0.0}


@WORKFLOWS.register_module("tool_call_workflow")
class ToolCallWorkflow(Workflow):
    """One request, ``repeat_times`` sampled tool calls through the in-process OpenAI client."""

    can_repeat = True
    can_reset = True

    def __init__(self, *, task: Task, model: Any, auxiliary_models: list[Any] | None = None):
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        require_history(model, type(self).__name__)
        self.client = model.get_openai_client()
        self.reset(task)

    def reset(self, task: Task) -> None:
        self.task = task
        args = task.workflow_args or {}
        row = task.raw_task or {}
        keys = {
            "question": args.get("question_key", task.format_args.prompt_key or "question"),
            "tools": args.get("tools_key", "tools"),
            "answer": args.get("answer_key", "answer"),
        }
        missing = [k for k in keys.values() if k not in row]
        if missing:
            raise ValueError(
                f"task {task.task_id!r}: row lacks {missing} (keys: {sorted(row)}); "
                "tool_call_workflow needs a question, the tools and the expected call"
            )
        self.question = row[keys["question"]]
        self.tools = row[keys["tools"]]
        self.expected = row[keys["answer"]]
        if isinstance(self.expected, str):
            self.expected = json.loads(self.expected)
        self.system_prompt = task.format_args.system_prompt or DEFAULT_SYSTEM_PROMPT
        self.rollout_args = task.rollout_args
        self.repeat_times = task.repeat_times
        self.run_id_base = 0

    def run(self) -> list[Experience]:
        self.model.extract_experience_from_history()  # start from a clean history
        response = self.client.chat.completions.create(
            model=self.client.model_path,
            messages=[
                {"role": "system", "content": self.system_prompt},
                {"role": "user", "content": self.question},
            ],
            tools=self.tools,
            n=self.repeat_times,
            temperature=self.rollout_args.temperature,
            top_p=self.rollout_args.top_p,
            max_tokens=self.rollout_args.max_tokens,
            seed=self.rollout_args.seed,
            stop=self.rollout_args.stop or None,
            extra_body={"top_k": self.rollout_args.top_k},
        )
        exps = self.model.extract_experience_from_history(shape="turn")
        for i, (exp, choice) in enumerate(zip(exps, response.choices, strict=True)):
            calls = [c.model_dump() for c in choice.message.tool_calls or []]
            components = score_tool_call(calls, self.expected)
            exp.reward = sum(components.values())
            exp.metrics.update(components)
            exp.metrics["called_a_tool"] = float(bool(calls))
            exp.eid.run = self.run_id_base + i
        return exps
