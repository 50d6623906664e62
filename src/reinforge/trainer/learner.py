"""The learner (DESIGN.md's rank side): the update of one step on this rank's share.

A :class:`Learner` runs on every trainer process, next to the weights it changes (a
:class:`~reinforge.trainer.trainer.Trainer`: the policy, the reference, the optimiser).
Its input is a :class:`~reinforge.trainer.prepared_step.RankShare` (tensors and the
step-wide denominators), never an ``Experience``: the planner turned those into
tensors on the driver. One update is ``update_epochs`` passes over the micro-batches,
each pass one forward, loss and backward per micro-batch (``learner_passes.py``),
then gradient clipping and one optimiser step; then the learning-rate schedule steps.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from reinforge.algorithms import TrainBatch
from reinforge.core.metric_names import (
    SFT_AUX_EXPERIENCES,
    SFT_AUX_LOSS,
    TRAIN_GRAD_NORM,
    TRAIN_NONFINITE_GRAD,
    train_metric,
)
from reinforge.trainer import learner_passes
from reinforge.trainer.flat_grads import FlatGradients
from reinforge.trainer.learner_passes import ReadyBatch
from reinforge.trainer.policy_model import trainable_parameters
from reinforge.trainer.prepared_step import RankShare
from reinforge.trainer.sharding.rank_metrics import gather_micro_batch_values, rank_times

if TYPE_CHECKING:
    from reinforge.trainer.trainer import Trainer

logger = logging.getLogger(__name__)


class Learner:
    """Updates ``trainer``'s weights from one rank's share of a step."""

    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer

    def learn(
        self, share: RankShare, on_micro_batch: Callable[[int, int], None] | None = None
    ) -> dict[str, float]:
        """The update on ``share``: returns the micro-batch metrics (of every rank)
        averaged over the passes, and the last gradient norm. On several ranks each runs
        ``share.slots`` passes per epoch (empty ones where it has fewer micro-batches)
        and the gradients are summed. ``on_micro_batch(k, n)`` is called after each of
        the ``n`` passes."""
        t = self.trainer
        ready = self._ready(share)
        start = time.monotonic()
        metrics: dict[str, float] = {}
        collected: dict[str, list[float]] = {}
        olds: list[torch.Tensor] = []  # pi_old per micro-batch, fixed by the first pass
        demos = [b.to(t.device) for b in share.demo_batches]
        passes = share.slots * t.cfg.update_epochs
        grad_norm = 0.0
        done = 0
        for _ in range(t.cfg.update_epochs):
            t.optimizer.zero_grad(set_to_none=True)
            # one process on the CPU: the gradients in one block (ranks' are their wrappers')
            flat = None if t.rank.distributed else FlatGradients(trainable_parameters(t.model))
            try:
                last = share.slots + share.demo_slots - 1
                for index in range(share.slots):
                    with t.strategy.grad_sync(t.forward_module, index == last):
                        if index < len(ready):
                            values = learner_passes.micro_batch_pass(
                                self, share, index, ready[index], olds
                            )
                            for key, value in values.items():
                                collected.setdefault(key, []).append(float(value))
                        else:
                            self.empty_pass()
                    done += 1
                    t._housekeeping()
                    if on_micro_batch is not None:
                        on_micro_batch(done, passes)
                if share.demo_slots:
                    collected.setdefault(SFT_AUX_LOSS, []).append(
                        learner_passes.demonstration_passes(self, share, demos, share.slots, last)
                    )
            finally:
                if flat is not None:
                    flat.close()
            if flat is not None:
                flat.drop_unused()  # what no backward reached, the optimiser skips
            grad_norm = self.optimizer_step()
            if not math.isfinite(grad_norm):
                metrics[TRAIN_NONFINITE_GRAD] = 1.0
        t.scheduler.step()
        if t.rank.distributed:
            collected = gather_micro_batch_values(collected)
            metrics.update(rank_times(time.monotonic() - start))
        metrics.update(
            {train_metric(k): learner_passes.over_micro_batches(k, v) for k, v in collected.items()}
        )
        metrics[TRAIN_GRAD_NORM] = grad_norm
        if share.demo_slots:
            metrics[train_metric(SFT_AUX_EXPERIENCES)] = float(share.demo_count)
        return metrics

    def _ready(self, share: RankShare) -> list[ReadyBatch]:
        """The share's micro-batches on the device, with the reference's log-probs when
        the loss has a KL term: those forwards run before any policy forward, so their
        logits never sit in memory beside the policy's gradients and autograd graph."""
        t = self.trainer
        ready = [
            ReadyBatch(mb, mb.train_batch().to(t.device), mb.own_rows.to(t.device))
            for mb in share.micro_batches
        ]
        if t.spec.kl_in_loss:
            for item in ready:
                item.ref_logprobs = t._ref_logprobs(item.batch)
            self.pair_reference_passes(share.slots - len(ready))
        return ready

    def pair_reference_passes(self, missing: int) -> None:
        """Empty reference forwards where the reference's forwards are collectives (the
        policy's base under LoRA, or a sharded reference): each rank runs as many as the
        rank with the most micro-batches."""
        t = self.trainer
        if t.ref_model is None or t.strategy.sharded:
            for _ in range(missing):
                t._ref_logprobs(self.empty_batch())

    def empty_batch(self) -> TrainBatch:
        """A two-token batch with nothing to train on: a rank's pass that adds no
        gradient but takes part in the ranks' collectives."""
        t = self.trainer
        pad = t.pad_token_id
        ids = torch.tensor([[pad, pad]])
        zeros = torch.zeros(1, 1, dtype=torch.bool)
        batch = TrainBatch(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            position_ids=torch.tensor([[0, 1]]),
            response_mask=torch.ones_like(zeros),
            loss_mask=zeros,
            prompt_lengths=torch.tensor([1]),
            response_lengths=torch.tensor([1]),
        )
        return batch.to(t.device)

    def empty_pass(self) -> None:
        """A forward and backward that adds zero to every gradient (see ``empty_batch``)."""
        t = self.trainer
        with t._autocast():
            logp, _ = t.forward_module(self.empty_batch(), only=None)
        self.backward(logp.sum() * 0.0)

    def backward(self, loss: torch.Tensor) -> None:
        """Backward of a rank's part of the step's loss. DDP and FSDP2 average the
        ranks' gradients; the ranks' parts add up to the loss, so each is scaled by
        the world size to make that average their sum."""
        t = self.trainer
        loss = loss * t.rank.world_size if t.rank.distributed else loss
        if t.scaler is not None:
            loss = t.scaler.scale(loss)
        loss.backward()

    def optimizer_step(self) -> float:
        """Clip the gradients and step the optimiser; returns the gradient norm. A
        non-finite norm skips the optimiser step (the gradients are dropped; under fp16
        the gradient scaler lowers its scale)."""
        t = self.trainer
        params = trainable_parameters(t.model)
        if t.scaler is not None:
            t.scaler.unscale_(t.optimizer)
        # with no clipping configured the norm is still measured (inf = never clip),
        # so it is reported and a non-finite gradient still skips the update
        limit = t.cfg.max_grad_norm if t.cfg.max_grad_norm is not None else math.inf
        grad_norm = t.strategy.clip_grad_norm(params, limit)
        if not math.isfinite(grad_norm):
            logger.warning("non-finite gradient norm; optimiser step skipped")
            if t.scaler is not None:
                t.scaler.update()
            t.optimizer.zero_grad(set_to_none=True)
            return grad_norm
        if t.scaler is not None:
            t.scaler.step(t.optimizer)
            t.scaler.update()
        else:
            t.optimizer.step()
        # gradients are dead weight until the next backward (the size of the model
        # in fp32): free them now, so the engine's sampling in between has that room
        t.optimizer.zero_grad(set_to_none=True)
        t._housekeeping()
        return grad_norm
