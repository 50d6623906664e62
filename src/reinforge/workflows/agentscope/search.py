"""``AgentScopeV1ReactSearchWorkflow`` (``agentscope_v1_react_search_workflow``): a ReAct
agent that searches, answers, and is judged by an auxiliary model.

Trinity-RFT's version searches the web through an MCP server (Tavily or SearXNG).
Machines reinforge trains on often have no network, so the search tool here looks
through a local corpus instead: ``workflow_args.corpus`` names a JSON Lines file of
``{"title": ..., "text": ...}`` documents (relative paths from the working
directory), or the task's row carries its own under ``workflow_args.documents_key``
(default ``documents``: a list of such objects or of strings). The tool ranks
documents by how many of the query's words they contain and returns the best
``top_k`` (default 3). A web search is a different tool in the same tool kit:
subclass and override ``search_tools``.

The agent gives a structured answer (``result``); the judge, the auxiliary model
named ``workflow_args.judge_model`` (default: the first one), is asked whether it
matches the truth and answers YES or NO; the reward is 1 for YES, else 0. Every
model call of the policy is an experience with that reward; ones longer than
``workflow_args.max_model_tokens`` (default 24000) are dropped.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from reinforge.core import Experience, Task
from reinforge.workflows.agentscope.react_agent import allowed_tool, react_agent, structured_field
from reinforge.workflows.agentscope.react_base import AgentScopeReActBase
from reinforge.workflows.workflow import WORKFLOWS

SEARCH_SYSTEM_PROMPT = (
    "You are an information seeking agent. Search for the information the question "
    "needs, as many times as it takes, then give an accurate answer."
)

JUDGE_PROMPT = """Decide whether the [response] to the [question] is correct, given the [correct_answer].

[question]: {question}

[response]: {response}

[correct_answer]: {correct_answer}

First explain briefly whether the response and the correct answer differ in any meaningful way (ignore small differences of format, and small numerical margins). Then write "Correctness: YES" if the response matches the correct answer, or "Correctness: NO" if it does not or is ambiguous."""

_VERDICT = re.compile(r"Correctness\W*(YES|NO)", re.IGNORECASE)
_WORD = re.compile(r"\w+")


class SearchAnswer(BaseModel):
    """The structured final answer of the search agent."""

    result: str = Field(description="The final answer to the user's question")


def load_corpus(path: str | Path, task: Task) -> list[dict[str, str]]:
    """The documents of a JSON Lines corpus file; a missing or malformed file is an
    error naming it and the task."""
    file = Path(path).expanduser()
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ValueError(
            f"task {task.task_id!r}: workflow_args.corpus {str(file)!r}: {exc}"
        ) from exc
    docs = []
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                docs.append(as_document(json.loads(line)))
            except ValueError as exc:
                raise ValueError(f"task {task.task_id!r}: {file}:{number}: {exc}") from exc
    return docs


def as_document(item: Any) -> dict[str, str]:
    if isinstance(item, str):
        return {"title": "", "text": item}
    if isinstance(item, dict) and isinstance(item.get("text"), str):
        return {"title": str(item.get("title", "")), "text": item["text"]}
    raise ValueError(f"a document must be a string or an object with a 'text', got {item!r}")


def rank(docs: list[dict[str, str]], query: str, top_k: int) -> list[dict[str, str]]:
    """The ``top_k`` documents sharing the most words with ``query`` (none share: none)."""
    words = {w.lower() for w in _WORD.findall(query)}
    scored = []
    for i, doc in enumerate(docs):
        text_words = {w.lower() for w in _WORD.findall(doc["title"] + " " + doc["text"])}
        overlap = len(words & text_words)
        if overlap:
            scored.append((-overlap, i, doc))
    return [doc for _, _, doc in sorted(scored)[:top_k]]


@WORKFLOWS.register_module("agentscope_v1_react_search_workflow")
class AgentScopeV1ReactSearchWorkflow(AgentScopeReActBase):
    """Search a local corpus, answer, be judged by an auxiliary model."""

    def reset(self, task: Task) -> None:
        super().reset(task)
        args = self.workflow_args
        self.max_iters = int(args.get("max_turns", self.max_iters))
        self.top_k = int(args.get("top_k", 3))
        self.max_model_tokens = int(args.get("max_model_tokens", 24000))
        self.judge_name = args.get("judge_model")
        corpus = args.get("corpus")
        if corpus:
            self.documents = load_corpus(corpus, task)
        else:
            key = args.get("documents_key", "documents")
            rows = self.raw_task.get(key)
            if not isinstance(rows, list):
                raise ValueError(
                    f"task {task.task_id!r}: agentscope_v1_react_search_workflow needs a "
                    f"corpus: set workflow_args.corpus (a JSON Lines file) or give the row "
                    f"a '{key}' list (row keys: {sorted(self.raw_task)})"
                )
            self.documents = [as_document(item) for item in rows]
        self.searches = 0

    def search_tools(self) -> list[Any]:
        """The agent's tools: ``search`` over the task's documents."""

        def search(query: str) -> str:
            """Search the document collection for the given query.

            Args:
                query (str): Words to look for.
            """
            self.searches += 1
            hits = rank(self.documents, query, self.top_k)
            if not hits:
                return "No document matches the query."
            return "\n\n".join(f"[{d['title']}] {d['text']}".strip() for d in hits)

        return [allowed_tool(search)]

    async def run_async(self) -> list[Experience]:
        judge = self.auxiliary_model(self.judge_name)  # fails early when none is configured
        self.searches = 0
        agent = react_agent(
            self.chat_model(),
            self.task.format_args.system_prompt or SEARCH_SYSTEM_PROMPT,
            tools=self.search_tools(),
            max_iters=self.max_iters,
            name="search_agent",
        )
        reply = await self.ask_agent(agent, self.task_desc, SearchAnswer)
        answer = structured_field(reply, "result")
        correct = await self.judge_result(answer, judge)
        experiences = self.experiences(
            float(correct), {"searches": float(self.searches), "max_turns": float(self.max_iters)}
        )
        kept = [e for e in experiences if len(e.tokens) <= self.max_model_tokens]
        if not kept:
            raise RuntimeError(
                f"task {self.task.task_id!r}: every model call was longer than "
                f"max_model_tokens={self.max_model_tokens}"
            )
        return kept

    async def judge_result(self, answer: str, judge: Any) -> bool:
        """Whether the judge model says ``answer`` matches the truth."""
        prompt = JUDGE_PROMPT.format(
            question=self.task_desc, response=answer, correct_answer=self.truth
        )
        runtime = getattr(judge, "auxiliary", None)
        client = getattr(runtime, "async_client", None)
        messages = [
            {"role": "system", "content": "You evaluate correctness."},
            {"role": "user", "content": prompt},
        ]
        if client is not None:
            completion = await client.chat.completions.create(
                model=client.model_path, messages=messages
            )
        else:
            completion = judge.chat.completions.create(model=judge.model_path, messages=messages)
        verdict = completion.choices[0].message.content or ""
        found = _VERDICT.findall(verdict)
        return bool(found) and found[-1].upper() == "YES"
