"""Math with RULER rewards: an auxiliary model ranks each group of answers.

The math reward (math-verify against the reference answer) is computed too, but
only as the *gold* reward, recorded in ``metrics`` (``gold_reward`` and its
components) so the judge's agreement with it can be plotted; training uses the
judge's scores. A group the judge cannot score (timeout, unreachable, unusable
reply after retries) is masked with the reason instead of being scored 0. Eval
tasks skip the judge and are scored by the math reward.

``workflow_args``: ``judge`` (auxiliary model name; default the first),
``position_check`` (judge twice in opposite orders; default false),
``judge_requirement`` (what the judge is told a good answer looks like).
"""

from __future__ import annotations

from typing import Any

from reinforge.core import Experience
from reinforge.models.auxiliary.judge import Judge
from reinforge.workflows.judged.ruler import (
    GroupScores,
    group_rng,
    pairwise_agreement,
    rank_group,
    rank_group_async,
)
from reinforge.workflows.math import R1_SYSTEM_PROMPT, AsyncMathWorkflow, MathWorkflow
from reinforge.workflows.workflow import WORKFLOWS

R1_REQUIREMENT = (
    "the reasoning inside <think> </think>, then the final answer inside <answer> </answer>"
)


def apply_group_scores(responses: list[Experience], result: GroupScores) -> list[Experience]:
    """Judge scores become rewards (gold stays in metrics); a failed group is masked."""
    gold = [float(e.metrics.get("gold_reward", 0.0)) for e in responses]
    metrics: dict[str, float] = result.metrics()
    if result.ok:
        agreement = pairwise_agreement(result.scores, gold)
        if agreement is not None:
            metrics["judge_gold_agreement"] = agreement
    for i, exp in enumerate(responses):
        exp.metrics.update(metrics)
        if result.ok:
            exp.reward = result.scores[i]
        else:
            exp.reward = 0.0
            exp.mask(result.reason or "judge_failed")
    return responses


class _RulerMixin:
    """What the sync and async RULER workflows share."""

    def _judge_setup(self) -> tuple[Judge, dict[str, Any]]:
        args = self.workflow_args
        judge = Judge(self.auxiliary_model(args.get("judge")))
        requirement = args.get("judge_requirement")
        if requirement is None:
            requirement = R1_REQUIREMENT if self.system_prompt == R1_SYSTEM_PROMPT else ""
        options = {
            "rng": group_rng(self.task, self.run_id_base),
            "requirement": requirement,
            "position_check": bool(args.get("position_check", False)),
        }
        return judge, options

    def _gold(self, responses: list[Experience]) -> list[Experience]:
        self.score(responses)  # the math reward, as gold
        for exp in responses:
            exp.metrics["gold_reward"] = float(exp.reward or 0.0)
        return responses


@WORKFLOWS.register_module("math_ruler_workflow")
class MathRULERWorkflow(_RulerMixin, MathWorkflow):
    """Math answers scored by an auxiliary judge comparing the whole group (RULER)."""

    def run(self) -> list[Experience]:
        responses = self._gold(self.model.chat(self.format_messages(), **self.chat_kwargs()))
        if self.task.is_eval:
            return responses
        judge, options = self._judge_setup()
        answers = [e.response_text or "" for e in responses]
        return apply_group_scores(responses, rank_group(judge, self.task_desc, answers, **options))


@WORKFLOWS.register_module("async_math_ruler_workflow")
class AsyncMathRULERWorkflow(_RulerMixin, AsyncMathWorkflow):
    is_async = True

    async def run_async(self) -> list[Experience]:
        replies = await self.model.chat_async(self.format_messages(), **self.chat_kwargs())
        responses = self._gold(replies)
        if self.task.is_eval:
            return responses
        judge, options = self._judge_setup()
        answers = [e.response_text or "" for e in responses]
        result = await rank_group_async(judge, self.task_desc, answers, **options)
        return apply_group_scores(responses, result)
