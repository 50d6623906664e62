"""The passes of a learner's update (``learner.py``): one micro-batch's forward, loss and
backward, and the demonstrations' SFT passes. They add to the gradients but never step
the optimiser; their inputs are tensors (``RankShare``), never experiences.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from reinforge.algorithms import (
    POLICY_LOSS_FNS,
    AlgorithmSpec,
    TrainBatch,
    entropy_bonus,
    kl_loss_term,
    truncated_is_weights,
)
from reinforge.algorithms.policy_loss import sft_loss
from reinforge.core.metric_names import LOSS, MAX_OVER_MICRO_BATCHES, MIN_OVER_MICRO_BATCHES
from reinforge.trainer.old_logprobs import compared_tokens, old_logprobs, sampler_mismatch
from reinforge.trainer.prepared_step import MicroBatch, RankShare
from reinforge.trainer.sharding.rank_metrics import sum_over_ranks

if TYPE_CHECKING:
    from reinforge.trainer.learner import Learner


@dataclass
class ReadyBatch:
    """A micro-batch of the share on the learner's device."""

    planned: MicroBatch
    #: ``planned.batch`` on the device
    batch: TrainBatch
    #: ``planned.own_rows`` on the device
    own_rows: torch.Tensor
    #: the reference's token log-probs (with a KL loss), computed before any update
    ref_logprobs: torch.Tensor | None = None


def demonstration_passes(
    learner: Learner, share: RankShare, batches: list[TrainBatch], first_slot: int, last: int
) -> float:
    """Forward and backward of the auxiliary SFT term on ``batches`` (this rank's
    demonstrations on the device), ``weight x`` the token-mean negative log-likelihood
    over all demonstration tokens; returns this rank's part of that mean (summed over
    the ranks when metrics are gathered)."""
    t = learner.trainer
    weight = t.cfg.sft_aux.weight if t.cfg.sft_aux is not None else 0.0
    mean = 0.0
    for index in range(share.demo_slots):
        with t.strategy.grad_sync(t.forward_module, first_slot + index == last):
            if index >= len(batches):
                learner.empty_pass()
                continue
            batch = batches[index]
            part = float(batch.loss_mask.sum()) / share.demo_tokens
            t._use_attention(t.model, batch)
            with t._autocast():
                logp, _ = t.forward_module(batch, only=batch.loss_mask)
            loss, _ = sft_loss(logp, None, None, batch.loss_mask)
            learner.backward(loss * (weight * part))
            mean += float(loss.detach()) * part
        t._housekeeping()
    return sum_over_ranks(mean) if t.rank.distributed else mean


def micro_batch_pass(
    learner: Learner, share: RankShare, index: int, ready: ReadyBatch, olds: list[torch.Tensor]
) -> dict[str, float]:
    """Forward, loss and backward of micro-batch ``index`` (``ready``), weighted by its share of the
    step's loss; returns its metrics. The first pass over a micro-batch fixes its
    π_old (appended to ``olds``) and measures the sampler's mismatch; with a
    ``sampler_correction`` each pass weights the tokens by min(π_old/π_sampler, cap)."""
    t = learner.trainer
    spec = t.spec
    batch, own = ready.batch, ready.own_rows
    mask = batch.loss_mask
    if spec.loss_agg_mode != "token-mean":
        weight = int(batch.input_ids.shape[0]) / share.total_rows
    else:
        weight = float(mask.sum()) / share.total_tokens
    need_logits = spec.entropy_coef > 0
    t._use_attention(t.model, batch)
    with t._autocast():
        logp, logits = t.forward_module(batch, with_logits=need_logits, only=batch.loss_mask)
    metrics: dict[str, float] = {}
    sampler = ready.planned.sampler_logprobs(batch)
    compared = compared_tokens(mask, own, ready.planned.sampled_rows, sampler)
    if index == len(olds):  # the first pass over this micro-batch
        olds.append(old_logprobs(logp, sampler, own))
        metrics.update(sampler_mismatch(logp, sampler, compared))
    token_weights = None
    if spec.sampler_correction is not None and sampler is not None:
        cap = spec.sampler_correction.cap
        token_weights, tis_metrics = truncated_is_weights(olds[index], sampler, compared, cap)
        metrics.update(tis_metrics)
    if spec.batch_advantages is not None:  # on-policy distillation: from pi_old
        advantages, adv_metrics = spec.batch_advantages(batch, olds[index], **spec.advantage_args)
        batch = dataclasses.replace(batch, advantages=advantages)
        metrics.update(adv_metrics)
    ref = ready.ref_logprobs if spec.kl_in_loss else None
    loss, loss_metrics = algorithm_loss(spec, logp, olds[index], logits, ref, batch, token_weights)
    learner.backward(loss * weight)
    loss_metrics[LOSS] = float(loss.detach())
    return {**metrics, **loss_metrics}


def algorithm_loss(
    spec: AlgorithmSpec,
    logp: torch.Tensor,
    old: torch.Tensor,
    logits: torch.Tensor | None,
    ref_logp: torch.Tensor | None,
    batch: TrainBatch,
    token_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The algorithm's loss of one micro-batch: the policy loss (its token terms
    scaled by ``token_weights`` when given), plus the KL loss against ``ref_logp``
    and the entropy bonus when the algorithm has them."""
    mask = batch.loss_mask
    weighting = {} if token_weights is None else {"token_weights": token_weights}
    loss, metrics = POLICY_LOSS_FNS.get(spec.policy_loss_fn)(
        logp,
        old,
        batch.advantages,
        mask,
        loss_agg_mode=spec.loss_agg_mode,
        **spec.policy_loss_args,
        **weighting,
    )
    if ref_logp is not None:
        kl, kl_metrics = kl_loss_term(
            logp, ref_logp, mask, spec.kl_loss, spec.kl_loss_coef, spec.loss_agg_mode
        )
        loss = loss + kl
        metrics.update(kl_metrics)
    if logits is not None:
        ent, ent_metrics = entropy_bonus(logits, mask, spec.entropy_coef, spec.loss_agg_mode)
        loss = loss + ent
        metrics.update(ent_metrics)
    return loss, metrics


def over_micro_batches(name: str, values: list[float]) -> float:
    """A micro-batch metric over the step: the max or min for extremes, else the mean."""
    if name in MAX_OVER_MICRO_BATCHES:
        return max(values)
    if name in MIN_OVER_MICRO_BATCHES:
        return min(values)
    return float(np.mean(values))
