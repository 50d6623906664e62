"""Rubric judging: an auxiliary model rates each response against weighted criteria.

The task row carries a rubric (``rubric_key``, default ``"rubric"``): a list of
criteria, each ``{"description": ..., "weight": ...}`` (``criterion`` is accepted for
``description``; a plain string is a criterion of weight 1). The judge sees the
prompt, one response and the rubric, and replies ``{"rating": 1..10}``, which maps to
a reward in [0, 1] as ``(rating - 1) / 9``. A response the judge cannot rate
(timeout, unreachable, unusable reply after retries, a rating outside 1..10) is
masked with the reason; the others of its group are kept.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import BaseModel, Field

from reinforge.core import Experience, Task
from reinforge.models.auxiliary.judge import Judge, Verdict, json_reply
from reinforge.workflows.simple import BaseSimpleWorkflow
from reinforge.workflows.workflow import WORKFLOWS

RUBRIC_POLICY_PROMPT = (
    "A conversation between User and Assistant. The user asks a question and the "
    "Assistant answers it helpfully, thinking about the reasoning first."
)

RUBRIC_JUDGE_PROMPT = (
    "You grade answers against a rubric. Given a prompt, one response and a list of "
    "weighted criteria, rate how well the response meets the criteria as a whole, "
    "counting heavier criteria more, on a scale from 1 (fails them) to 10 (meets all). "
    'Reply with a JSON object only, for example: {"rating": 7}'
)


class Rating(BaseModel):
    rating: int = Field(ge=1, le=10)


def rubric_lines(rubric: Any) -> str:
    """The rubric as numbered lines for the judge; raises ValueError naming what is wrong."""
    if not rubric:
        return "(no rubric given: judge overall quality and correctness)"
    if not isinstance(rubric, list):
        raise ValueError(f"the rubric must be a list of criteria, got {type(rubric).__name__}")
    lines = []
    for i, item in enumerate(rubric, 1):
        if isinstance(item, str):
            text, weight = item, 1
        elif isinstance(item, dict):
            text = item.get("description") or item.get("criterion")
            weight = item.get("weight", 1)
            if not text:
                raise ValueError(f"rubric item {i} has no 'description': {item!r}")
        else:
            raise ValueError(f"rubric item {i} must be a string or an object, got {item!r}")
        lines.append(f"{i}. (weight {weight}) {text}")
    return "\n".join(lines)


@WORKFLOWS.register_module("rubric_judge_workflow")
class RubricJudgeWorkflow(BaseSimpleWorkflow):
    """Each response rated against the task's rubric by an auxiliary judge.

    ``workflow_args``: ``judge`` (auxiliary model name; default the first),
    ``rubric_key`` (default ``"rubric"``)."""

    default_system_prompt = RUBRIC_POLICY_PROMPT

    needs_reward_fn = False  # the judge is the scorer

    def reset(self, task: Task) -> None:
        super().reset(task)
        key = self.workflow_args.get("rubric_key", "rubric")
        try:
            self.rubric_text = rubric_lines(self.raw_task.get(key))
        except ValueError as exc:
            raise ValueError(f"task {task.task_id!r}: {exc}") from None

    def _messages(self, response: str) -> list[dict[str, str]]:
        user = (
            f"<prompt>\n{self.task_desc}\n</prompt>\n<response>\n{response}\n</response>\n"
            f"<rubric>\n{self.rubric_text}\n</rubric>"
        )
        return [
            {"role": "system", "content": RUBRIC_JUDGE_PROMPT},
            {"role": "user", "content": user},
        ]

    def _rate(self, judge: Judge, exp: Experience) -> tuple[Experience, Verdict]:
        verdict = judge.ask(
            self._messages(exp.response_text or ""), json_reply(Rating), schema=Rating
        )
        return exp, verdict

    def run(self) -> list[Experience]:
        responses = self.model.chat(self.format_messages(), **self.chat_kwargs())
        judge = Judge(self.auxiliary_model(self.workflow_args.get("judge")))
        with ThreadPoolExecutor(max(1, len(responses)), "reinforge-rubric") as pool:
            rated = list(pool.map(lambda e: self._rate(judge, e), responses))
        for i, (exp, verdict) in enumerate(rated):
            exp.eid.run = self.run_id_base + i
            exp.metrics.update(verdict.metrics())
            if verdict.ok:
                exp.reward = (verdict.value.rating - 1) / 9
                exp.metrics["judge_rating"] = float(verdict.value.rating)
            else:
                exp.reward = 0.0
                exp.mask(f"judge_{verdict.reason}: {verdict.error}")
        return responses
