"""``PreparedStep``: a training step's inputs, made ready before any weight changes."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from reinforge.algorithms import TrainBatch
from reinforge.core import Experience


@dataclass
class PreparedStep:
    """What the update phase of a step consumes, one entry per micro-batch.

    Everything here is computed with the weights as they were when the step began:
    the advantages (already set on the experiences), the reference's log-probs, and
    which rows take π_old from the trainer's own first pass.
    """

    #: the usable experiences, sorted by length
    experiences: list[Experience]
    #: ``experiences`` split into micro-batches
    micro_batches: list[list[Experience]]
    #: each micro-batch collated
    batches: list[TrainBatch]
    #: the reference's token log-probs per micro-batch (empty without a KL loss)
    ref_logprobs: list[torch.Tensor]
    #: ``[B]`` bool per micro-batch: rows whose π_old is the trainer's first-pass log-prob
    own_rows: list[torch.Tensor]
    #: action tokens of the whole step (a micro-batch's share of the loss is its part)
    total_tokens: float
    #: the advantage estimator's metrics, named with the train/ prefix
    metrics: dict[str, float]
    #: demonstrations for the auxiliary SFT term (``trainer.sft_aux``), collated per
    #: micro-batch (this rank's); empty when the step has none or the term's weight is 0
    demo_batches: list[TrainBatch] = field(default_factory=list)
    #: micro-batch passes every rank runs per epoch (this rank's ``batches`` first, then
    #: empty passes); ``len(batches)`` on a single process
    slots: int = 0
    #: the same for the demonstrations
    demo_slots: int = 0
    #: demonstration tokens of the whole step (each batch's share of the SFT term)
    demo_tokens: float = 0.0
    #: demonstrations of the whole step
    demo_count: int = 0

    def __post_init__(self) -> None:
        if not self.slots:
            self.slots = len(self.batches)
        if not self.demo_slots:
            self.demo_slots = len(self.demo_batches)
        if self.demo_batches and not self.demo_tokens:
            self.demo_tokens = float(sum(int(b.loss_mask.sum()) for b in self.demo_batches))
        if self.demo_batches and not self.demo_count:
            self.demo_count = sum(int(b.input_ids.shape[0]) for b in self.demo_batches)
