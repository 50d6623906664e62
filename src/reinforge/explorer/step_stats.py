"""What one explore step (or a whole run) produced, and the metrics computed from it.

The explorer loop stays in ``explorer.py``; the numbers reported for a step, an eval
pass or a run summary, and the task records stored with each step, are made here
from the step's ``TaskResult``s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from reinforge.buffer import TaskRecord
from reinforge.core import Experience
from reinforge.core import explore_metric_names as names
from reinforge.explorer.messages import MASKED, TaskResult


@dataclass
class StepOutput:
    step: int
    num_tasks: int
    results: list[TaskResult]
    experiences: list[Experience]
    metrics: dict[str, float]
    #: what the step's metrics were computed from; the run's summary adds these up
    stats: ResultStats
    #: experiences written to the buffer (after the experience pipeline)
    stored: int


@dataclass
class ExploreSummary:
    steps: int = 0
    tasks: int = 0
    experiences: int = 0
    status_counts: dict[str, int] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    elapsed: float = 0.0


def _masked_reason(result: TaskResult) -> str | None:
    """Why every experience of a successful task is masked, or None if some are kept."""
    reasons = [e.mask_reason for e in result.experiences]
    if result.ok and reasons and all(reasons):
        return "; ".join(sorted(set(reasons)))  # type: ignore[arg-type]
    return None


def task_records(results: list[TaskResult]) -> list[TaskRecord]:
    """One stored record per task request: its outcome, error, attempts, time and mean
    score (``score_of`` its experiences, as the eval metrics count them; None without
    any). A task whose experiences are all masked is recorded as 'masked' with the
    reason."""
    records = []
    for r in results:
        reason = _masked_reason(r)
        status, error = (MASKED, reason) if reason else (r.status, r.error)
        kept = sum(e.mask_reason is None for e in r.experiences)
        scores = [score_of(e) for e in r.experiences]
        score = sum(scores) / len(scores) if scores else None
        records.append(
            TaskRecord(
                r.taskset, r.batch_id, r.task_id, status, error, r.attempts, kept, r.elapsed, score
            )
        )
    return records


def masked_metrics(exps: list[Experience], prefix: str) -> dict[str, float]:
    """How many experiences are masked, in all and per reason (the reason's first word)."""
    masked = [e.mask_reason for e in exps if e.mask_reason is not None]
    out = {prefix + names.MASKED_EXPERIENCES: float(len(masked))}
    for reason in masked:
        key = f"{prefix}{names.MASKED_PREFIX}{reason.split(':')[0].split()[0]}"
        out[key] = out.get(key, 0.0) + 1.0
    return out


def score_of(exp: Experience) -> float:
    """The number an experience is judged by: its ``accuracy`` metric if any, else its reward."""
    if names.ACCURACY in exp.metrics:
        return float(exp.metrics[names.ACCURACY])
    return float(exp.reward or 0.0)


def step_metrics(results: list[TaskResult], prefix: str) -> dict[str, float]:
    return ResultStats().add(results).metrics(prefix)


class ResultStats:
    """The numbers ``step_metrics`` is computed from, gathered result by result.

    A run's summary covers every task of the run; keeping these few numbers per
    experience instead of the results themselves lets each step's experiences be
    freed once they are stored (holding them all made every full garbage collection
    walk the whole run). Values are kept in arrival order, so the metrics are exactly
    those ``step_metrics`` gives for all the results at once.
    """

    def __init__(self) -> None:
        self.tasks = 0
        self.failed = 0
        self.rewards: list[float] = []  # of experiences that are not masked
        self.scores: list[float] = []  # score_of each experience
        self.has_accuracy = False
        self.lengths: list[int] = []
        self.truncated: list[bool] = []
        # workflow metric name -> its mean over each task's experiences, per task
        self.per_task: dict[str, list[float]] = {}

    def add(self, results: list[TaskResult]) -> ResultStats:
        for result in results:
            self.tasks += 1
            self.failed += not result.ok
            sums: dict[str, list[float]] = {}
            for exp in result.experiences:
                metrics = exp.metrics
                reward = exp.reward
                if reward is not None and exp.mask_reason is None:
                    self.rewards.append(reward)
                self.has_accuracy = self.has_accuracy or names.ACCURACY in metrics
                self.scores.append(score_of(exp))
                self.lengths.append(exp.response_length)
                self.truncated.append(exp.truncate_status is not None)
                for key, value in metrics.items():
                    if isinstance(value, (int, float)):  # numbers only (bools count as 0/1)
                        total = sums.get(key)
                        if total is None:
                            sums[key] = [float(value), 1.0]
                        else:
                            total[0] += value
                            total[1] += 1.0
            for key, (total, count) in sums.items():
                self.per_task.setdefault(key, []).append(total / count)
        return self

    def merge(self, other: ResultStats) -> ResultStats:
        """Add the numbers of later results (as ``add`` of those results would)."""
        self.tasks += other.tasks
        self.failed += other.failed
        self.rewards.extend(other.rewards)
        self.scores.extend(other.scores)
        self.has_accuracy = self.has_accuracy or other.has_accuracy
        self.lengths.extend(other.lengths)
        self.truncated.extend(other.truncated)
        for key, values in other.per_task.items():
            self.per_task.setdefault(key, []).extend(values)
        return self

    def metrics(self, prefix: str) -> dict[str, float]:
        out: dict[str, float] = {
            prefix + names.TASKS: float(self.tasks),
            prefix + names.FAILED_TASKS: float(self.failed),
            prefix + names.EXPERIENCES: float(len(self.lengths)),
        }
        if not self.lengths:
            return out
        if self.rewards:
            out[prefix + names.REWARD_MEAN] = float(np.mean(self.rewards))
            out[prefix + names.REWARD_STD] = float(np.std(self.rewards))
        if self.has_accuracy:
            out[prefix + names.ACCURACY] = float(np.mean(self.scores))
        out[prefix + names.RESPONSE_LENGTH] = float(np.mean(self.lengths))
        out[prefix + names.TRUNCATED_RATIO] = float(np.mean(self.truncated))
        out.update(self.workflow_metrics(prefix))
        return out

    def workflow_metrics(self, prefix: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for key, values in self.per_task.items():
            out[prefix + names.workflow_metric(key, "mean")] = float(np.mean(values))
            out[prefix + names.workflow_metric(key, "max")] = float(max(values))
            out[prefix + names.workflow_metric(key, "min")] = float(min(values))
        return out


def workflow_metrics(results: list[TaskResult], prefix: str) -> dict[str, float]:
    """The numbers workflows put in ``exp.metrics`` (e.g. ``actual_env_steps``), as
    Trinity-RFT's runner reports them: averaged over each task's experiences, then
    ``{prefix}workflow/{name}/mean``, ``/max`` and ``/min`` over the tasks that have it."""
    return ResultStats().add(results).workflow_metrics(prefix)
