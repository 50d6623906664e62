"""RULER: one judge call scores a whole group of answers to the same question.

Relative scoring (as in OpenPipe's RULER) needs no reference answer: the judge sees
every candidate at once and gives each a score in [0, 1]. GRPO only uses scores
relative to the group, so a judge that ranks well is enough even if it is not
calibrated.

Reliability, beyond a single call: candidates are shown in a shuffled order (judges
favour early positions), scores are validated (one number in [0, 1] per candidate)
and retried by the ``Judge``; with ``position_check`` the group is judged a second
time in the reverse of that order, the two are averaged, and their agreement is
reported as ``judge_position_consistency``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from reinforge.models.auxiliary.judge import Judge, JudgeReplyError, Verdict, extract_json

RULER_SYSTEM_PROMPT = (
    "You are an impartial grader. You receive a question and {n} candidate answers to it. "
    "Compare them with each other, judge how well each one answers the question, and give "
    "each a score between 0 (useless or wrong) and 1 (fully correct and well presented)."
)

RULER_USER_PROMPT = """Question:
{question}
{requirement}
{candidates}

Think briefly if you need to, then end your reply with a JSON object holding exactly {n} \
scores, one per candidate, in the order shown:
{{"scores": [score of candidate 1, ..., score of candidate {n}]}}"""


def ruler_messages(question: str, answers: list[str], requirement: str = "") -> list[dict]:
    """The chat messages that ask a judge to score ``answers`` (in the order given)."""
    n = len(answers)
    candidates = "\n\n".join(f"Candidate {i + 1}:\n{a}" for i, a in enumerate(answers))
    req = f"\nWhat a good answer looks like: {requirement}\n" if requirement else ""
    return [
        {"role": "system", "content": RULER_SYSTEM_PROMPT.format(n=n)},
        {
            "role": "user",
            "content": RULER_USER_PROMPT.format(
                question=question, requirement=req, candidates=candidates, n=n
            ),
        },
    ]


def parse_scores(n: int):
    """A parser of a judge's reply: exactly ``n`` numbers in [0, 1], given as
    ``{"scores": [...]}`` or as a bare list (the format Trinity-RFT's prompt asks for)."""

    def parse(text: str) -> list[float]:
        data = extract_json(text)
        if isinstance(data, dict):
            data = data.get("scores")
        if not isinstance(data, list):
            raise JudgeReplyError("the reply has no list of scores")
        if len(data) != n:
            raise JudgeReplyError(f"{len(data)} scores for {n} candidates")
        scores = []
        for value in data:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise JudgeReplyError(f"score {value!r} is not a number")
            if not 0.0 <= value <= 1.0:
                raise JudgeReplyError(f"score {value} is outside [0, 1]", "out_of_range")
            scores.append(float(value))
        return scores

    return parse


@dataclass
class GroupScores:
    """The judge's scores of one group, in the group's own order (None if it failed)."""

    scores: list[float] | None
    verdicts: list[Verdict] = field(default_factory=list)
    consistency: float | None = None

    @property
    def ok(self) -> bool:
        return self.scores is not None

    @property
    def reason(self) -> str | None:
        """Why the group has no scores (the first failed verdict's reason)."""
        if self.ok:
            return None
        failed = next((v for v in self.verdicts if not v.ok), None)
        return f"judge_{failed.reason}: {failed.error}" if failed else "judge_failed"

    def metrics(self) -> dict[str, float]:
        """Per-experience judge numbers: success, latency (summed over calls), attempts."""
        out = {
            "judge_success": float(self.ok),
            "judge_latency": sum(v.latency for v in self.verdicts),
            "judge_attempts": float(sum(v.attempts for v in self.verdicts)),
            "judge_cached": float(all(v.cached for v in self.verdicts)) if self.verdicts else 0.0,
        }
        if self.consistency is not None:
            out["judge_position_consistency"] = self.consistency
        return out


def _orders(n: int, rng: random.Random, position_check: bool) -> list[list[int]]:
    order = list(range(n))
    rng.shuffle(order)
    return [order, order[::-1]] if position_check and n > 1 else [order]


def _combine(orders: list[list[int]], verdicts: list[Verdict], n: int) -> GroupScores:
    per_order: list[list[float]] = []
    for order, verdict in zip(orders, verdicts, strict=True):
        if verdict.ok:
            unshuffled = [0.0] * n
            for shown, original in enumerate(order):
                unshuffled[original] = verdict.value[shown]
            per_order.append(unshuffled)
    if not per_order:
        return GroupScores(None, verdicts)
    scores = [sum(col) / len(per_order) for col in zip(*per_order, strict=True)]
    consistency = None
    if len(per_order) == 2:
        a, b = per_order
        consistency = 1.0 - sum(abs(x - y) for x, y in zip(a, b, strict=True)) / n
    return GroupScores(scores, verdicts, consistency)


def _questions(
    question: str, answers: list[str], rng: random.Random, requirement: str, position_check: bool
) -> tuple[list[list[int]], list[list[dict]]]:
    """The orders the group is shown in, and the judge messages for each."""
    orders = _orders(len(answers), rng, position_check)
    messages = [ruler_messages(question, [answers[i] for i in o], requirement) for o in orders]
    return orders, messages


def rank_group(
    judge: Judge,
    question: str,
    answers: list[str],
    *,
    rng: random.Random,
    requirement: str = "",
    position_check: bool = False,
) -> GroupScores:
    """Score ``answers`` with one judge call (two with ``position_check``)."""
    n = len(answers)
    orders, questions = _questions(question, answers, rng, requirement, position_check)
    verdicts = [judge.ask(m, parse_scores(n)) for m in questions]
    return _combine(orders, verdicts, n)


async def rank_group_async(
    judge: Judge,
    question: str,
    answers: list[str],
    *,
    rng: random.Random,
    requirement: str = "",
    position_check: bool = False,
) -> GroupScores:
    import asyncio

    n = len(answers)
    orders, questions = _questions(question, answers, rng, requirement, position_check)
    verdicts = await asyncio.gather(*(judge.ask_async(m, parse_scores(n)) for m in questions))
    return _combine(orders, list(verdicts), n)


def pairwise_agreement(scores: list[float], gold: list[float]) -> float | None:
    """Of the pairs whose gold rewards differ, the fraction the judge orders the same
    way (ties in the judge's scores count half). None when gold never differs."""
    agree = pairs = 0.0
    for i in range(len(gold)):
        for j in range(i + 1, len(gold)):
            if gold[i] == gold[j]:
                continue
            pairs += 1
            judged = scores[i] - scores[j]
            if judged == 0:
                agree += 0.5
            elif (judged > 0) == (gold[i] > gold[j]):
                agree += 1
    return agree / pairs if pairs else None


def group_rng(task: Any, run_id_base: int) -> random.Random:
    """A shuffle order that is reproducible per task and run."""
    return random.Random(f"{getattr(task, 'task_id', '')}/{run_id_base}")
