"""Trainable RULER: the policy judges its own group and learns to judge.

For each task the policy answers ``n`` times, then is shown the group (shuffled)
and asked for RULER scores. With probability ``gold_probability`` (default 0.2,
reproducible per task) the reference answer is treated as available:

* the answers are rewarded by the math reward (gold);
* the policy samples ``n`` judgements; each earns ``1 - mean |score - gold|`` (gold
  scaled to [0, 1]) when it parses, 0 when it does not, and they are trained too,
  in a group of their own (task id ``"<task>-ruler"``).

Otherwise the answers are rewarded by one judgement of the policy (retried up to
``judge_attempts`` times if unusable; the group is masked if none parses), and the
judgement itself is not trained (nothing says how good it was).

``workflow_args``: ``gold_probability``, ``gold_range`` (the math reward's [min, max],
default [-0.1, 1.1]), ``judge_attempts`` (default 3), ``position_check`` is not used.
"""

from __future__ import annotations

import time

from reinforge.core import Experience
from reinforge.models.auxiliary.judge import JudgeReplyError
from reinforge.workflows.judged.math_ruler import R1_REQUIREMENT
from reinforge.workflows.judged.ruler import (
    group_rng,
    pairwise_agreement,
    parse_scores,
    ruler_messages,
)
from reinforge.workflows.math import R1_SYSTEM_PROMPT, MathWorkflow
from reinforge.workflows.workflow import WORKFLOWS


def _unshuffle(shown: list[float], order: list[int]) -> list[float]:
    out = [0.0] * len(order)
    for position, original in enumerate(order):
        out[original] = shown[position]
    return out


@WORKFLOWS.register_module("math_trainable_ruler_workflow")
class MathTrainableRULERWorkflow(MathWorkflow):
    """Math where the policy itself is the RULER judge, trained against gold when known."""

    def _judgements(self, messages: list[dict], n: int) -> list[tuple[Experience, list | None]]:
        kwargs = self.chat_kwargs()
        kwargs["n"] = n
        try:
            samples = self.model.chat(messages, **kwargs)
        except ValueError:  # the group does not fit the context: no judgement possible
            return []
        parse = parse_scores(self._group_size)
        out = []
        for sample in samples:
            try:
                out.append((sample, parse(sample.response_text or "")))
            except JudgeReplyError:
                out.append((sample, None))
        return out

    def run(self) -> list[Experience]:
        responses = self.score(self.model.chat(self.format_messages(), **self.chat_kwargs()))
        gold = [float(e.reward or 0.0) for e in responses]
        for exp, g in zip(responses, gold, strict=True):
            exp.metrics["gold_reward"] = g
        if self.task.is_eval:
            return responses
        args = self.workflow_args
        rng = group_rng(self.task, self.run_id_base)
        use_gold = self.truth is not None and rng.random() < float(
            args.get("gold_probability", 0.2)
        )
        self._group_size = n = len(responses)
        order = list(range(n))
        rng.shuffle(order)
        requirement = R1_REQUIREMENT if self.system_prompt == R1_SYSTEM_PROMPT else ""
        messages = ruler_messages(
            self.task_desc, [responses[i].response_text or "" for i in order], requirement
        )
        start = time.monotonic()
        if use_gold:
            judged = self._judgements(messages, n)
        else:
            judged = []
            for _ in range(int(args.get("judge_attempts", 3))):
                judged.extend(self._judgements(messages, 1))
                if judged[-1][1] is not None:
                    break
        latency = time.monotonic() - start
        if not judged:
            for exp in responses:
                exp.reward = 0.0
                exp.metrics.update({"judge_success": 0.0, "gold_used": float(use_gold)})
                exp.mask("judge_context: the group does not fit the policy's context length")
            return responses
        parsed = [(s, _unshuffle(v, order)) if v is not None else (s, None) for s, v in judged]
        success = sum(v is not None for _, v in parsed) / len(parsed)
        metrics = {"judge_success": success, "judge_latency": latency, "gold_used": float(use_gold)}
        if use_gold:
            lo, hi = args.get("gold_range", (-0.1, 1.1))
            target = [min(1.0, max(0.0, (g - lo) / (hi - lo))) for g in gold]
            judges = []
            for i, (sample, scores) in enumerate(parsed):
                if scores is None:
                    sample.reward = 0.0
                else:
                    mae = sum(abs(s - t) for s, t in zip(scores, target, strict=True)) / n
                    sample.reward = 1.0 - mae
                sample.metrics.update(metrics)
                sample.metrics["reward_for_judge"] = sample.reward
                sample.eid.task = f"{self.task.task_id}-ruler"
                sample.eid.run = self.run_id_base + i
                judges.append(sample)
            for exp in responses:
                exp.metrics.update(metrics)
            return responses + judges
        scores = next((v for _, v in reversed(parsed) if v is not None), None)
        if scores is not None:
            agreement = pairwise_agreement(scores, gold)
            if agreement is not None:
                metrics["judge_gold_agreement"] = agreement
        for i, exp in enumerate(responses):
            exp.metrics.update(metrics)
            if scores is None:
                exp.reward = 0.0
                exp.mask("judge_unparseable: the policy's own judgement did not parse")
            else:
                exp.reward = scores[i]
        return responses
