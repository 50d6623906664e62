"""``reasoning_gym_reward``: score answers with reasoning-gym's own per-dataset scorers."""

from __future__ import annotations

import json
import logging
from typing import Any

from reinforge.rewards.extract import extract_answer, strip_thinking
from reinforge.rewards.reasoning_gym_score import score_answer
from reinforge.rewards.reward_fn import REWARD_FUNCTIONS, RewardFn
from reinforge.rewards.timeout import call_with_timeout

logger = logging.getLogger(__name__)


def entry_from_row(row: dict[str, Any], truth: str | None = None) -> dict[str, Any]:
    """Rebuild a reasoning-gym entry ``{"question", "answer", "metadata"}`` from a taskset row.

    Tasksets stored as JSON lines or parquet may hold ``metadata`` as a JSON string;
    ``truth`` fills in a missing ``answer``.
    """
    entry = dict(row)
    metadata = entry.get("metadata")
    if isinstance(metadata, str):
        entry["metadata"] = json.loads(metadata)
    elif metadata is None:
        entry["metadata"] = {}
    if entry.get("answer") is None and truth is not None:
        entry["answer"] = truth
    return entry


@REWARD_FUNCTIONS.register_module("reasoning_gym_reward")
class ReasoningGymReward(RewardFn):
    """Returns ``{"accuracy": score}``, the score of reasoning-gym's scorer for the task.

    Needs the taskset row, passed by workflows as the ``raw_task`` keyword: the
    reasoning-gym entry ``{"question", "answer", "metadata"}`` whose
    ``metadata["source_dataset"]`` names the dataset (and so the scorer). The
    answer scored is the last ``<answer>`` block, else the last ``\\boxed{}``,
    else the response after its thinking, stripped.

    Args:
        dataset: score every task with this dataset's scorer instead of
            ``metadata["source_dataset"]``.
        timeout: seconds allowed per scoring (default 10; some scorers use
            sympy); a timeout or a scorer error scores 0. ``None`` or 0 scores
            in-process.
    """

    def __init__(
        self, dataset: str | None = None, timeout: float | None = 10.0, **kwargs: Any
    ) -> None:
        super().__init__(dataset=dataset, timeout=timeout, **kwargs)
        self.dataset = dataset
        self.timeout = timeout

    @staticmethod
    def extract(response: str) -> str:
        """The answer to score: tagged or boxed, else the whole answer part of the response."""
        answer = extract_answer(response)
        return answer if answer is not None else strip_thinking(response)

    def __call__(
        self,
        response: str,
        truth: str | None = None,
        prompt: str | None = None,
        raw_task: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> dict[str, float]:
        if raw_task is None:
            raise ValueError("reasoning_gym_reward needs the task row as the raw_task keyword")
        entry = entry_from_row(raw_task, truth)
        dataset = self.dataset or entry["metadata"].get("source_dataset")
        if not dataset:
            raise ValueError("reasoning-gym task has no metadata['source_dataset']; set 'dataset'")
        answer = self.extract(response)
        outcome = call_with_timeout(score_answer, (dataset, answer, entry), timeout=self.timeout)
        if not outcome.ok:
            logger.debug("reasoning-gym scoring failed for %s: %s", dataset, outcome.error)
        return {"accuracy": float(outcome.value_or(0.0))}
