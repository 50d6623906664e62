"""Episode → experiences: the one conversion from rLLM-style episodes to training data.

One ``Experience`` per step that recorded a model call, in trajectory order:

* ``tokens`` = the step's ``prompt_ids + response_ids``, exactly as encoded and
  sampled (``prompt_length`` = ``len(prompt_ids)``), ``logprobs`` = the sampling
  log-probabilities; nothing is re-tokenized.
* ``reward``: the trajectory reward (``reward="trajectory"``, default: every step
  of a trajectory is credited with its outcome, as rLLM's default advantage mode
  does) or the step's own, possibly shaped/discounted, reward (``reward="step"``,
  for step-wise estimators such as ``step_wise_grpo`` with ``reward_mode: step``).
* ``eid``: ``task`` and ``run`` from the episode id ``"{task}:{run}"`` (the explorer
  overwrites ``batch`` and ``task`` with the task's own), ``step`` = the position of
  the step in the episode, counted across trajectories.
* ``info``: ``episode_id``, ``termination_reason``, ``is_correct``,
  ``trajectory_name``/``_index``/``_uid``, ``trajectory_reward``, ``step_index`` (in
  its trajectory), ``step_reward``, ``num_steps``, ``done``, ``finish_reason``,
  ``model_version`` (when the step knows it), ``masked``, ``error`` for an
  episode that ended in an exception, and ``timing`` / ``step_timing`` when the
  episode and step carry ``info["timing"]`` (``TimingTrackingMixin``).
* ``metrics``: the episode's numeric metrics, plus ``accuracy`` = ``is_correct``
  (so explore/eval accuracy is episode correctness) unless ``accuracy_metric=False``.

Masking: an episode whose termination reason is in ``mask_termination_reasons``
(default: ``timeout`` and ``error``) says nothing about the policy's skill - the
environment crashed or the clock ran out - so it must not count as a reward of 0.
With ``masked="drop"`` (default) it yields no experiences at all: nothing to train
on and nothing to pull its group's mean down, whatever operators the pipeline runs.
With ``masked="invalid_reward"`` its experiences are kept with ``reward=None`` and
``info["masked"] = True``: the pipeline's ``invalid_reward_filter`` removes them
(and counts them under ``invalid_reward_filter/none``); it must then run before
``group_advantage``, and the trainer computes advantages only after the pipeline.
The explorer's adapter calls ``episode_outcome`` instead, which also hands a masked
episode over as ``Experience.mask``-ed experiences (kept out of training), so that
a task whose rollouts all timed out counts as done, not as failed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from reinforge.core import EID, Experience
from reinforge.core.episode import Episode, Step, TerminationReason, Trajectory

REWARD_MODES = ("trajectory", "step")
MASKED_MODES = ("drop", "invalid_reward")
DEFAULT_MASKED_REASONS = (TerminationReason.TIMEOUT, TerminationReason.ERROR)


@dataclass
class ConversionOptions:
    """How ``episode_to_experiences`` scores and masks; see the module docstring."""

    reward: str = "trajectory"
    mask_termination_reasons: tuple[TerminationReason, ...] = field(
        default_factory=lambda: DEFAULT_MASKED_REASONS
    )
    masked: str = "drop"
    accuracy_metric: bool = True

    def __post_init__(self) -> None:
        if self.reward not in REWARD_MODES:
            raise ValueError(f"reward must be one of {REWARD_MODES}, got {self.reward!r}")
        if self.masked not in MASKED_MODES:
            raise ValueError(f"masked must be one of {MASKED_MODES}, got {self.masked!r}")
        reasons = self.mask_termination_reasons
        if isinstance(reasons, str | TerminationReason):
            reasons = (reasons,)
        self.mask_termination_reasons = tuple(TerminationReason.parse(r) for r in reasons or ())

    @classmethod
    def build(cls, *layers: ConversionOptions | Mapping[str, Any] | None) -> ConversionOptions:
        """Options from defaults overlaid with each layer in turn (options or dicts)."""
        values: dict[str, Any] = {}
        known = {f.name for f in fields(cls)}
        for layer in layers:
            if layer is None:
                continue
            items = (
                {f.name: getattr(layer, f.name) for f in fields(cls)}
                if isinstance(layer, ConversionOptions)
                else dict(layer)
            )
            unknown = sorted(set(items) - known)
            if unknown:
                raise ValueError(f"unknown conversion option(s) {unknown}; known: {sorted(known)}")
            values.update(items)
        return cls(**values)

    def is_masked(self, episode: Episode) -> bool:
        reason = episode.termination_reason or TerminationReason.UNKNOWN
        return reason in self.mask_termination_reasons


def _split_id(episode_id: str) -> tuple[str, int]:
    """``("task", run)`` from ``"task:run"``; run 0 when the id has no numeric suffix."""
    head, sep, tail = episode_id.rpartition(":")
    if sep and tail.isdigit():
        return head, int(tail)
    return episode_id, 0


def _numeric_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in metrics.items():
        if isinstance(value, bool | int | float) and math.isfinite(float(value)):
            out[str(key)] = float(value)
    return out


def _trajectory_reward(traj: Trajectory) -> float:
    """The trajectory reward; a hand-built episode without one gets the sum of step rewards."""
    if traj.reward is not None:
        return float(traj.reward)
    return float(sum(step.reward for step in traj.steps))


def _step_experience(
    step: Step,
    reward: float | None,
    eid: EID,
    info: dict[str, Any],
    metrics: dict[str, float],
) -> Experience:
    out = step.model_output
    finish = out.finish_reason if out is not None else step.info.get("finish_reason")
    if finish is not None:
        info["finish_reason"] = finish
    if step.weight_version is not None:
        info["model_version"] = step.weight_version
    return Experience(
        tokens=[*step.prompt_ids, *step.response_ids],
        prompt_length=len(step.prompt_ids),
        logprobs=list(step.logprobs) if step.logprobs else None,
        reward=reward,
        eid=eid,
        info=info,
        metrics=metrics,
        messages=list(step.chat_completions) or None,
        response_text=(
            out.text if out is not None and out.text is not None else step.model_response
        ),
        truncate_status="response_truncated" if finish == "length" else None,
    )


def episode_to_experiences(
    episode: Episode,
    options: ConversionOptions | Mapping[str, Any] | None = None,
    *,
    run: int | None = None,
) -> list[Experience]:
    """The experiences of ``episode`` (see the module docstring for every field).

    ``run`` overrides the rollout index parsed from ``episode.id``.
    """
    opts = options if isinstance(options, ConversionOptions) else ConversionOptions.build(options)
    masked = opts.is_masked(episode)
    if masked and opts.masked == "drop":
        return []
    task_id, parsed_run = _split_id(episode.id)
    run = parsed_run if run is None else run
    reason = (episode.termination_reason or TerminationReason.UNKNOWN).value
    metrics = _numeric_metrics(episode.metrics)
    if opts.accuracy_metric:
        metrics["accuracy"] = float(bool(episode.is_correct))
    error = episode.info.get("error")
    exps: list[Experience] = []
    position = 0
    for t_index, traj in enumerate(episode.trajectories):
        traj_reward = _trajectory_reward(traj)
        for s_index, step in enumerate(traj.steps):
            if not step.has_tokens:
                continue
            reward: float | None = (
                traj_reward if opts.reward == "trajectory" else float(step.reward)
            )
            info: dict[str, Any] = {
                "episode_id": episode.id,
                "termination_reason": reason,
                "is_correct": bool(episode.is_correct),
                "trajectory_name": traj.name,
                "trajectory_index": t_index,
                "trajectory_uid": traj.uid,
                "trajectory_reward": traj_reward,
                "step_index": s_index,
                "step_reward": float(step.reward),
                "num_steps": len(traj.steps),
                "done": bool(step.done),
                "masked": masked,
            }
            if masked:
                reward = None
            if error is not None:
                info["error"] = error
            if "timing" in episode.info:  # TimingTrackingMixin's, stored with the experience
                info["timing"] = episode.info["timing"]
            if "timing" in step.info:
                info["step_timing"] = step.info["timing"]
            eid = EID(task=task_id, run=run, step=position)
            exps.append(_step_experience(step, reward, eid, info, dict(metrics)))
            position += 1
    return exps


def _mask_reason(episode: Episode) -> str:
    """``"<reason>: episode <id> ..."``: the explorer counts it under ``masked/<reason>``."""
    reason = (episode.termination_reason or TerminationReason.UNKNOWN).value
    text = f"{reason}: episode {episode.id}"
    error = episode.info.get("error")
    if isinstance(error, Mapping) and error.get("error_type"):
        message = str(error.get("error_message") or "").strip().splitlines()[:1]
        text += f" raised {error['error_type']}" + "".join(f": {m}" for m in message)
    return text


def episode_outcome(
    episode: Episode,
    options: ConversionOptions | Mapping[str, Any] | None = None,
    *,
    run: int | None = None,
) -> list[Experience]:
    """What the explorer receives for ``episode``: its experiences, and for a masked
    episode a record of how it ended, so that it counts as an outcome, not a failure.

    An episode that is not masked gives ``episode_to_experiences`` unchanged. A masked
    one (a timeout, an environment error...) must still reach the explorer: a task
    whose workflow returns nothing is a failed task, and it would be retried.

    * ``masked="drop"``: its steps, converted as for ``invalid_reward`` (reward None,
      ``info["masked"]``), each marked with ``Experience.mask``: the explorer counts
      them under ``masked/<reason>``, records the task with the reason, and never
      passes them to the pipeline or the trainer.
    * ``masked="invalid_reward"``: its experiences as converted, for the pipeline's
      ``invalid_reward_filter``.

    An episode without a step that has tokens (it timed out before its first reply)
    gives one empty experience marked with ``Experience.mask``.
    """
    opts = options if isinstance(options, ConversionOptions) else ConversionOptions.build(options)
    if not opts.is_masked(episode):
        return episode_to_experiences(episode, opts, run=run)
    kept = ConversionOptions.build(opts, {"masked": "invalid_reward"})
    exps = episode_to_experiences(episode, kept, run=run)
    if exps and opts.masked == "invalid_reward":
        return exps
    if not exps:
        task_id, parsed_run = _split_id(episode.id)
        info: dict[str, Any] = {
            "episode_id": episode.id,
            "termination_reason": (episode.termination_reason or TerminationReason.UNKNOWN).value,
            "is_correct": bool(episode.is_correct),
            "num_steps": 0,
            "masked": True,
        }
        if episode.info.get("error") is not None:
            info["error"] = episode.info["error"]
        metrics = _numeric_metrics(episode.metrics)
        if opts.accuracy_metric:
            metrics["accuracy"] = float(bool(episode.is_correct))
        eid = EID(task=task_id, run=parsed_run if run is None else run, step=0)
        exps = [Experience(tokens=[], prompt_length=0, eid=eid, info=info, metrics=metrics)]
    reason = _mask_reason(episode)
    for exp in exps:
        exp.mask(reason)
    return exps


def episodes_to_experiences(
    episodes: Iterable[Episode], options: ConversionOptions | Mapping[str, Any] | None = None
) -> list[Experience]:
    """``episode_to_experiences`` over several episodes, concatenated."""
    opts = options if isinstance(options, ConversionOptions) else ConversionOptions.build(options)
    return [exp for episode in episodes for exp in episode_to_experiences(episode, opts)]
