"""``email_search_workflow``: an agent answers questions about a mailbox with tools (ART-E).

The policy gets the question, the user's inbox address and today's date, and the
tools ``search_emails``, ``read_email`` and ``return_final_answer`` through the
OpenAI tool-calling path (the rollout model's own OpenAI client, so every turn is
recorded token-exactly). It may take up to ``max_turns`` turns. An auxiliary judge
decides whether the final answer matches the reference; the reward follows ART-E's
schedule:

* wrong answer: -1, plus partial credit;
* "I don't know", no answer, or out of turns: 0, plus partial credit;
* right answer: 1, + 0.3 if it cites the right email, + 0.1 / (number of sources),
  + 0.1 x (1 - turns / max_turns) for being quick.

Partial credit (each 0.1): the right email showed up in a search, was read, was
cited. A wrong answer thus always scores below "I don't know". Without a judge
configured (``workflow_args.judge: null`` and no auxiliary model), the answer is
accepted when the reference appears in it (case-insensitive). A judge that cannot
decide (timeout, unreachable, unusable reply) masks the run, with the reason.

Task rows are the generated queries: ``question``, ``answer``, ``message_ids``,
``inbox_address``, ``query_date``. ``workflow_args``: ``max_turns`` (10),
``tool_obs_char_limit`` (2000), ``judge`` (auxiliary model name), ``mailbox`` (path
of an emails.jsonl; default the shipped mailbox).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from reinforge.core import Experience, Task
from reinforge.envs.email_search.mailbox import Mailbox
from reinforge.envs.email_search.tools import EmailTools
from reinforge.models.auxiliary.judge import Judge, Verdict, json_reply
from reinforge.workflows.step_wise import require_history
from reinforge.workflows.workflow import WORKFLOWS, Workflow

SYSTEM_PROMPT = (
    "You are an email search assistant. Answer the user's question by searching their "
    "mailbox with the tools. Use precise keywords; if a search finds nothing, try other "
    "keywords. Read an email before relying on it. When you know the answer, call "
    "return_final_answer with the answer and the message ids of the emails it comes "
    'from; if you cannot find it, answer "I don\'t know" with no sources. You have at '
    "most {max_turns} turns.\nThe user's address: {inbox}\nToday's date: {today}"
)

JUDGE_PROMPT = (
    "You check an assistant's answer against a reference answer. Decide what the question "
    "asks for, take the facts of the reference answer that answer it, and accept the "
    "assistant's answer if it states all of them with the same meaning (wording, order "
    "and extra non-conflicting details do not matter); otherwise reject it. Reply with a "
    'JSON object only: {"accept": true} or {"accept": false}'
)

DONT_KNOW = "i don't know"


class Acceptance(BaseModel):
    accept: bool


def art_e_reward(
    *,
    correct: bool,
    attempted: bool,
    found: bool,
    read: bool,
    cited: bool,
    num_sources: int,
    turns: int,
    max_turns: int,
) -> float:
    """ART-E's reward schedule (see the module docstring)."""
    partial = 0.1 * found + 0.1 * read + 0.1 * cited
    if correct:
        reward = 1.0 + (0.3 if cited else 0.0)
        reward += 0.1 / num_sources if num_sources else 0.0
        return reward + 0.1 * (1 - turns / max_turns)
    if attempted:
        return -1.0 + partial
    return partial


@WORKFLOWS.register_module("email_search_workflow")
class EmailSearchWorkflow(Workflow):
    """Multi-turn tool use over a mailbox, judged against the reference answer."""

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
        missing = [
            k for k in ("question", "answer", "message_ids", "inbox_address") if k not in row
        ]
        if missing:
            raise ValueError(
                f"task {task.task_id!r}: row lacks {missing} (keys: {sorted(row)}); "
                "email_search_workflow needs a generated email-search query"
            )
        self.row = row
        args = task.workflow_args or {}
        self.max_turns = int(args.get("max_turns", 10))
        path = args.get("mailbox")
        self.mailbox = Mailbox.default() if path is None else _mailbox_at(path)
        self.tool_limit = int(args.get("tool_obs_char_limit", 2000))
        self.judge_name = args.get("judge")
        if self.judge_name is not None:
            self.auxiliary_model(self.judge_name)  # a missing judge fails before any turn
        self.rollout_args = task.rollout_args

    def _messages(self) -> list[dict[str, Any]]:
        system = SYSTEM_PROMPT.format(
            max_turns=self.max_turns,
            inbox=self.row["inbox_address"],
            today=self.row.get("query_date", "unknown"),
        )
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": self.row["question"]},
        ]

    async def _agent(self, tools: EmailTools) -> tuple[int, str | None]:
        """Run the agent; return the turns it took and its plain-text reply, if it
        ended without calling return_final_answer."""
        messages = self._messages()
        args = self.rollout_args
        for turn in range(1, self.max_turns + 1):
            response = await self.client.chat.completions.create(
                model=self.client.model_path,
                messages=messages,
                tools=tools.schemas,
                temperature=args.temperature,
                top_p=args.top_p,
                max_tokens=args.max_tokens,
            )
            message = response.choices[0].message
            calls = message.tool_calls or []
            entry: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
            if calls:
                entry["tool_calls"] = [c.model_dump() for c in calls]
            messages.append(entry)
            if not calls:
                return turn, message.content or ""
            for call in calls:
                observation = tools.call(call.function.name, call.function.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": observation})
            if tools.final_answer is not None:
                return turn, None
        return self.max_turns, None

    async def _judge(self, answer: str) -> Verdict:
        if self.judge_name is None and not self.auxiliary_models:
            accepted = self.row["answer"].strip().lower() in answer.lower()
            return Verdict(value=Acceptance(accept=accepted), ok=True)
        judge = Judge(self.auxiliary_model(self.judge_name))
        user = (
            f"Question: {self.row['question']}\nReference answer: {self.row['answer']}\n"
            f"Assistant's answer: {answer}"
        )
        messages = [
            {"role": "system", "content": JUDGE_PROMPT},
            {"role": "user", "content": user},
        ]
        return await judge.ask_async(messages, json_reply(Acceptance), schema=Acceptance)

    async def run_async(self) -> list[Experience]:
        self.model.extract_experience_from_history()  # start from a clean history
        tools = EmailTools(
            self.mailbox, self.row["inbox_address"], self.tool_limit, task_id=self.task.task_id
        )
        turns, plain_reply = await self._agent(tools)
        final = tools.final_answer or {"answer": plain_reply, "sources": []}
        answer = (final.get("answer") or "").strip()
        sources = list(final.get("sources") or [])
        dont_know = answer.lower().rstrip(".") == DONT_KNOW or not answer
        target = self.row["message_ids"][0] if self.row["message_ids"] else None
        metrics = {
            "agent_turns": float(turns),
            "found_right_email": float(target in tools.found_ids),
            "read_right_email": float(target in tools.read_ids),
            "cited_right_email": float(target in sources),
            "bad_tool_calls": float(tools.bad_calls),
            "invalid_reads": float(tools.invalid_reads),
            "returned_final_answer": float(tools.final_answer is not None),
            "said_dont_know": float(dont_know),
        }
        mask = None
        correct = False
        if not dont_know:
            verdict = await self._judge(answer)
            metrics.update(verdict.metrics())
            if verdict.ok:
                correct = verdict.value.accept
            else:
                mask = f"judge_{verdict.reason}: {verdict.error}"
        metrics["answer_correct"] = float(correct)
        metrics["accuracy"] = float(correct)
        reward = art_e_reward(
            correct=correct,
            attempted=not dont_know,
            found=bool(metrics["found_right_email"]),
            read=bool(metrics["read_right_email"]),
            cited=bool(metrics["cited_right_email"]),
            num_sources=len(sources),
            turns=turns,
            max_turns=self.max_turns,
        )
        exps = self.model.extract_experience_from_history()
        for step, exp in enumerate(exps):
            exp.eid.step = step
            exp.reward = reward
            exp.metrics.update(metrics)
            exp.info["final_answer"] = json.dumps(final)
            if mask:
                exp.mask(mask)
        return exps


_MAILBOXES: dict[str, Mailbox] = {}


def _mailbox_at(path: str) -> Mailbox:
    """One Mailbox per emails.jsonl path and process (building the index takes a moment)."""
    if path not in _MAILBOXES:
        _MAILBOXES[path] = Mailbox(path)
    return _MAILBOXES[path]
