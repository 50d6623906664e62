"""``llm_judge``: score, re-weight or filter experiences with an auxiliary model.

Each experience's prompt and response go to the judge, which replies
``{"score": 0..1}`` against the configured ``criteria``. ``mode`` says what the
score does: ``replace`` the reward, ``add`` ``weight * score`` to it, or ``filter``
(keep experiences scoring at least ``threshold``). An experience the judge cannot
score (timeout, unreachable, unusable reply after retries) is dropped, or kept
unchanged with ``on_failure: keep``; the step metrics count both, per reason.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from pydantic import BaseModel, Field

from reinforge.buffer.operators.base import ExperienceOperatorV1, OperatorResult
from reinforge.buffer.operators.registry import EXPERIENCE_OPERATORS
from reinforge.core import Experience
from reinforge.core.explore_metric_names import dropped_metric
from reinforge.models.auxiliary import Judge, json_reply, pick_client

NAME = "llm_judge"

JUDGE_PROMPT = (
    "You grade an assistant's reply to a request. Criteria: {criteria}. Give a score "
    "between 0 (fails the criteria) and 1 (meets them fully). Reply with a JSON object "
    'only: {{"score": number}}'
)


class Score(BaseModel):
    score: float = Field(ge=0.0, le=1.0)


def request_text(exp: Experience) -> str:
    """What the experience's model was asked: the last user turn, else the prompt text."""
    for message in reversed(exp.messages or []):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return message["content"]
    return exp.prompt_text or ""


@EXPERIENCE_OPERATORS.register_module(NAME)
class LLMJudge(ExperienceOperatorV1):
    """An LLM-as-judge reward (or filter) from an auxiliary model named ``judge``."""

    def __init__(
        self,
        judge: str | int | None = None,
        mode: Literal["replace", "add", "filter"] = "replace",
        criteria: str = "the reply is correct, complete and clearly written",
        weight: float = 1.0,
        threshold: float = 0.5,
        on_failure: Literal["drop", "keep"] = "drop",
    ) -> None:
        if mode not in ("replace", "add", "filter"):
            raise ValueError(f"mode must be replace, add or filter, got {mode!r}")
        if on_failure not in ("drop", "keep"):
            raise ValueError(f"on_failure must be drop or keep, got {on_failure!r}")
        self.judge_name = judge
        self.mode, self.criteria = mode, criteria
        self.weight, self.threshold, self.on_failure = float(weight), float(threshold), on_failure
        self._judge: Judge | None = None

    def _client(self):
        models = self.auxiliary_models or {}
        named = [k for k in models if isinstance(k, str)]
        clients = [models[k][0] for k in named]
        if isinstance(self.judge_name, int):
            index = self.judge_name
            if index not in models:
                raise LookupError(
                    f"operator {NAME} asks for auxiliary model #{index}, but "
                    f"explorer.auxiliary_models declares {named}"
                )
            return models[index][0]
        try:
            return pick_client(clients, self.judge_name, f"operator {NAME}")
        except LookupError:
            if self.judge_name in named:
                return models[self.judge_name][0]
            raise

    async def prepare(self) -> None:
        self._judge = Judge(self._client())

    def _messages(self, exp: Experience) -> list[dict[str, str]]:
        user = f"Request:\n{request_text(exp)}\n\nReply:\n{exp.response_text or ''}"
        return [
            {"role": "system", "content": JUDGE_PROMPT.format(criteria=self.criteria)},
            {"role": "user", "content": user},
        ]

    async def process(self, exps: list[Experience]) -> OperatorResult:
        if self._judge is None:
            await self.prepare()
        judge = self._judge
        verdicts = await asyncio.gather(
            *(judge.ask_async(self._messages(e), json_reply(Score), schema=Score) for e in exps)
        )
        kept: list[Experience] = []
        metrics: dict[str, float] = {f"{NAME}/failed": 0.0}
        scores, latencies = [], []
        for exp, verdict in zip(exps, verdicts, strict=True):
            latencies.append(verdict.latency)
            if not verdict.ok:
                metrics[f"{NAME}/failed"] += 1
                key = f"{NAME}/failed/{verdict.reason}"
                metrics[key] = metrics.get(key, 0.0) + 1
                if self.on_failure == "keep":
                    kept.append(exp)
                continue
            score = verdict.value.score
            scores.append(score)
            exp.metrics["judge_score"] = score
            if self.mode == "replace":
                exp.reward = score
            elif self.mode == "add":
                exp.reward = (exp.reward or 0.0) + self.weight * score
            elif score < self.threshold:
                continue
            kept.append(exp)
        metrics[f"{NAME}/scored"] = float(len(scores))
        metrics[dropped_metric(NAME)] = float(len(exps) - len(kept))
        metrics[f"{NAME}/cached"] = float(sum(v.cached for v in verdicts))
        if scores:
            metrics[f"{NAME}/score_mean"] = sum(scores) / len(scores)
        if latencies:
            metrics[f"{NAME}/latency_mean"] = sum(latencies) / len(latencies)
        return kept, metrics
