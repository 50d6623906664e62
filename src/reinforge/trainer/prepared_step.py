"""What the planner hands a learner: a rank's share of one step, tensors only.

The driver's :class:`~reinforge.trainer.step_planner.StepPlanner` turns a step's
experiences into one :class:`RankShare` per rank; a learner (``learner.py``) updates the
weights from its share alone. Nothing here holds an ``Experience``: a share pickles to
the micro-batches' tensors and a few numbers, which is all a rank process receives.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import torch

from reinforge.algorithms import TrainBatch
from reinforge.core.metric_names import (
    TRAIN_EXPERIENCES,
    TRAIN_ROWS,
    TRAIN_SAMPLES_PER_MIN,
    TRAIN_STEP_TIME,
    TRAIN_TOKENS,
    TRAIN_WORLD_SIZE,
)
from reinforge.trainer.shared_prompts import share_prompts
from reinforge.trainer.step_result import StepResult


@dataclass
class MicroBatch:
    """One micro-batch as a learner trains it (CPU tensors until the learner moves them)."""

    #: the rows collated (a ``SharedPromptBatch`` where rows share their prompt)
    batch: TrainBatch
    #: ``[B]`` bool: rows whose π_old is the learner's own first-pass log-prob
    own_rows: torch.Tensor
    #: ``[B]`` bool: rows that carry the engine's sampled log-probs
    sampled_rows: torch.Tensor
    #: ``[B, L - 1]`` the engine's log-probs in the shifted layout, zeros on rows without
    #: them; None when ``batch.old_logprobs`` has them all, or when no row has any
    sampler: torch.Tensor | None = None
    #: set where this micro-batch crossed to another process without its shared-prompt
    #: layout (the learner lays it out again: ``shared_prompts.share_prompts``)
    layout_dropped: bool = False

    def __getstate__(self) -> dict[str, Any]:
        """What a rank receives: the batch without what it can rebuild (see ``_to_wire``)."""
        state = dict(self.__dict__)
        state["layout_dropped"] = (
            self.layout_dropped or getattr(self.batch, "packed", None) is not None
        )
        state["batch"] = _to_wire(self.batch)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state["batch"] = _from_wire(state["batch"])
        self.__dict__.update(state)

    @property
    def tokens(self) -> int:
        """Tokens of the rows, prompt included (what the rank plan balances)."""
        return int(self.batch.attention_mask.sum())

    def train_batch(self) -> TrainBatch:
        """The batch to train on: with its shared-prompt layout, rebuilt here when it
        crossed to this process without (the same layout: ``share_prompts`` is
        deterministic)."""
        return share_prompts(self.batch) if self.layout_dropped else self.batch

    def sampler_logprobs(self, batch: TrainBatch) -> torch.Tensor | None:
        """The engine's log-probs of ``batch`` (this micro-batch on the learner's device)."""
        if batch.old_logprobs is not None:
            return batch.old_logprobs
        return None if self.sampler is None else self.sampler.to(batch.loss_mask.device)


def _to_wire(batch: TrainBatch) -> dict[str, Any]:
    """A batch's fields as a rank receives them. The shared-prompt layout stays behind
    (its attention mask alone is rows x width x width); so do the attention mask and
    the position ids where they are what ``collate`` makes of the rows' lengths; token
    ids travel as int32. ``_from_wire`` restores the same tensors."""
    fields = {f.name: getattr(batch, f.name) for f in dataclasses.fields(TrainBatch)}
    ids = fields["input_ids"]
    lengths = fields["prompt_lengths"] + fields["response_lengths"]
    attention, positions = _collated_masks(lengths, ids.shape[1])
    if torch.equal(fields["attention_mask"], attention) and torch.equal(
        fields["position_ids"], positions
    ):
        del fields["attention_mask"], fields["position_ids"]
    if ids.dtype == torch.int64 and (ids.numel() == 0 or int(ids.max()) < 2**31):
        fields["input_ids"] = ids.to(torch.int32)
    return fields


def _from_wire(fields: dict[str, Any]) -> TrainBatch:
    ids = fields["input_ids"].to(torch.int64)
    if "attention_mask" not in fields:
        lengths = fields["prompt_lengths"] + fields["response_lengths"]
        fields["attention_mask"], fields["position_ids"] = _collated_masks(lengths, ids.shape[1])
    return TrainBatch(**{**fields, "input_ids": ids})


def _collated_masks(lengths: torch.Tensor, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``collate``'s attention mask and position ids of right-padded rows of ``lengths``."""
    columns = torch.arange(width, dtype=torch.long)
    attention = (columns[None, :] < lengths[:, None].to(torch.long)).to(torch.long)
    return attention, columns[None, :] * attention


@dataclass
class RankShare:
    """One rank's part of a step, and the step-wide numbers its loss is scaled by.

    Every micro-batch's loss is weighted by its share of the whole step (of its action
    tokens, or of its rows), so the ranks' gradients add up to what one process
    computes on the whole step.
    """

    #: this rank's micro-batches, in training order
    micro_batches: list[MicroBatch]
    #: action tokens of the whole step (the token-mean loss's denominator)
    total_tokens: float
    #: rows of the whole step (the denominator of the other aggregations)
    total_rows: int
    #: micro-batch passes every rank runs per epoch (this rank's first, then empty
    #: passes that pair up the ranks' collectives); 0: ``len(micro_batches)``
    slots: int = 0
    #: this rank's demonstrations for the auxiliary SFT term (``trainer.sft_aux``)
    demo_batches: list[TrainBatch] = field(default_factory=list)
    #: the same as ``slots``, for the demonstrations
    demo_slots: int = 0
    #: demonstration tokens of the whole step (each batch's share of the SFT term)
    demo_tokens: float = 0.0
    #: demonstrations of the whole step
    demo_count: int = 0

    def __post_init__(self) -> None:
        if not self.slots:
            self.slots = len(self.micro_batches)
        if not self.demo_slots:
            self.demo_slots = len(self.demo_batches)

    @property
    def tokens(self) -> int:
        """Tokens this rank trains on, prompts included (demonstrations too)."""
        demos = sum(int(b.attention_mask.sum()) for b in self.demo_batches)
        return sum(mb.tokens for mb in self.micro_batches) + demos


@dataclass
class StepPlan:
    """The planner's result for one step: each rank's share, and the step's metrics
    that the planner measured (stale experiences, advantages, prompt sharing)."""

    #: one share per rank, in rank order; empty when the step is skipped
    shares: list[RankShare]
    metrics: dict[str, float]
    #: usable experiences (fresh, with an action token)
    experiences: int = 0
    #: rows trained (after merging step prefixes)
    rows: int = 0
    #: action tokens trained
    tokens: float = 0.0

    @property
    def skipped(self) -> bool:
        """Nothing usable: no weights change."""
        return not self.shares


def step_result(
    plan: StepPlan, learned: dict[str, float], seconds: float, world_size: int
) -> StepResult:
    """A step's result: the planner's metrics, the learners' (``learned``, rank 0's,
    which hold every rank's micro-batches), and the step's counts and speed."""
    metrics = {**plan.metrics, **learned}
    metrics.update(
        {
            TRAIN_EXPERIENCES: float(plan.experiences),
            TRAIN_ROWS: float(plan.rows),
            TRAIN_TOKENS: plan.tokens,
            TRAIN_STEP_TIME: seconds,
            TRAIN_SAMPLES_PER_MIN: 60.0 * plan.experiences / max(seconds, 1e-9),
            TRAIN_WORLD_SIZE: float(world_size),
        }
    )
    return StepResult(skipped=False, metrics=metrics)
