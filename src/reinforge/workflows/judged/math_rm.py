"""Math scored by a reward model: an auxiliary model rates each response.

``math_rm_workflow`` samples ``n`` answers and asks a scorer for each one's reward
components. The scorer is the task's reward function when one is configured (its
constructor gets ``auxiliary_models`` if it takes them), else ``reward_model_score``:
the auxiliary model rates the answer from 0 to 1. A scorer returns a dict: its
``reward`` key is the reward if present, else the sum of its values; every value is
recorded in ``metrics``. When the reference answer is known the math reward is
recorded too, as ``gold_reward`` (never as the reward). A response the reward model
cannot score (timeout, unusable reply after retries) is masked with the reason.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import BaseModel, Field

from reinforge.core import Experience, Task
from reinforge.models.auxiliary.judge import Judge, Verdict, json_reply
from reinforge.rewards import REWARD_FUNCTIONS
from reinforge.rewards.reward_fn import RewardFn, call_reward_fn
from reinforge.workflows.math import R1_SYSTEM_PROMPT
from reinforge.workflows.simple import BaseSimpleWorkflow
from reinforge.workflows.workflow import WORKFLOWS

RM_SYSTEM_PROMPT = (
    "You are a reward model for math answers. Read the problem and the proposed answer, "
    "check the reasoning and the result, and rate the answer from 0 (wrong) to 1 (correct "
    'and clearly justified). Reply with a JSON object only: {"score": number}.'
)


class RMScore(BaseModel):
    score: float = Field(ge=0.0, le=1.0)


class JudgeFailed(RuntimeError):
    """A model-based scorer could not score a response; ``verdict`` says why."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(f"judge_{verdict.reason}: {verdict.error}")
        self.verdict = verdict


@REWARD_FUNCTIONS.register_module("reward_model_score")
class RewardModelScore(RewardFn):
    """``{"reward": s}`` with ``s`` in [0, 1] rated by an auxiliary model (``judge``
    names it; default the first). Raises ``JudgeFailed`` when the model cannot."""

    def __init__(
        self,
        auxiliary_models: list[Any] | None = None,
        judge: str | None = None,
        system_prompt: str = RM_SYSTEM_PROMPT,
        **kwargs: Any,
    ) -> None:
        super().__init__(judge=judge, **kwargs)
        from reinforge.models.auxiliary import pick_client

        self.judge = Judge(
            pick_client(auxiliary_models, judge, "reward function reward_model_score")
        )
        self.system_prompt = system_prompt
        self.last_verdict: Verdict | None = None

    def __call__(
        self, response: str, truth: str | None = None, prompt: str | None = None, **kwargs: Any
    ) -> dict[str, float]:
        messages = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": f"Problem:\n{prompt}\n\nProposed answer:\n{response}"},
        ]
        verdict = self.judge.ask(messages, json_reply(RMScore), schema=RMScore)
        if not verdict.ok:
            raise JudgeFailed(verdict)
        return {"reward": verdict.value.score, **verdict.metrics()}


def reward_of(components: dict[str, float]) -> float:
    """The scalar reward of a scorer's components: ``reward`` if given, else the sum."""
    if "reward" in components:
        return float(components["reward"])
    return float(sum(components.values()))


@WORKFLOWS.register_module("math_rm_workflow")
class MathRMWorkflow(BaseSimpleWorkflow):
    """Math answers rewarded by a reward model (an auxiliary model or a model-based
    reward function); the math reward is kept as ``gold_reward`` when truth is known."""

    default_system_prompt = R1_SYSTEM_PROMPT
    default_reward_fn = "reward_model_score"

    def reset(self, task: Task) -> None:
        super().reset(task)
        self._gold_fn = None
        if self.truth is not None:
            self._gold_fn = REWARD_FUNCTIONS.get("math_reward")()

    def _score_one(self, exp: Experience) -> Experience:
        text = exp.response_text or ""
        if self._gold_fn is not None:
            gold = self._gold_fn(response=text, truth=self.truth)
            exp.metrics["gold_reward"] = float(sum(gold.values()))
        try:
            components = call_reward_fn(
                self.reward_fn,
                response=text,
                truth=self.truth,
                optional={"prompt": self.task_desc, "raw_task": self.raw_task},
            )
        except JudgeFailed as exc:
            exp.reward = 0.0
            exp.metrics.update(exc.verdict.metrics())
            exp.mask(str(exc))
            return exp
        exp.reward = reward_of(components)
        exp.metrics.update({k: float(v) for k, v in components.items()})
        return exp

    def score_all(self, responses: list[Experience]) -> list[Experience]:
        """Score the group's responses concurrently (one scorer call each)."""
        with ThreadPoolExecutor(max(1, len(responses)), "reinforge-rm") as pool:
            list(pool.map(self._score_one, responses))
        for i, exp in enumerate(responses):
            exp.eid.run = self.run_id_base + i
        return responses

    def run(self) -> list[Experience]:
        return self.score_all(self.model.chat(self.format_messages(), **self.chat_kwargs()))


@WORKFLOWS.register_module("async_math_rm_workflow")
class AsyncMathRMWorkflow(MathRMWorkflow):
    is_async = True

    async def run_async(self) -> list[Experience]:
        replies = await self.model.chat_async(self.format_messages(), **self.chat_kwargs())
        return await asyncio.to_thread(self.score_all, replies)
