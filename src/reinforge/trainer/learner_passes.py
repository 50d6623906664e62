"""The update side of a step (DESIGN.md's learner): one micro-batch's forward, loss
and backward, the demonstrations' SFT passes, and the empty passes that keep ranks'
collectives paired.

Split out of ``trainer.py`` so that the trainer stays one class under the house rules;
these run on the trainer's model and add to its gradients, but never step the optimiser.
"""

from __future__ import annotations

import dataclasses
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
from reinforge.trainer.old_logprobs import (
    compared_tokens,
    old_logprobs,
    sampler_logprobs,
    sampler_mismatch,
)
from reinforge.trainer.prepared_step import PreparedStep
from reinforge.trainer.sharding.rank_metrics import sum_over_ranks
from reinforge.trainer.sharding.strategy import grad_sync

if TYPE_CHECKING:
    from reinforge.trainer.trainer import Trainer


def empty_pass(trainer: Trainer) -> None:
    """A forward and backward that adds zero to every gradient (see ``_empty_batch``)."""
    with trainer._autocast():
        logp, _ = trainer.forward_module(trainer._empty_batch(), only=None)
    trainer._backward(logp.sum() * 0.0)


def demonstration_passes(trainer: Trainer, step: PreparedStep, first_slot: int, last: int) -> float:
    """Forward and backward of the auxiliary SFT term, ``weight x`` the token-mean
    negative log-likelihood over all demonstration tokens; returns this rank's
    part of that mean (summed over the ranks when metrics are gathered)."""
    cfg = trainer.cfg
    weight = cfg.sft_aux.weight if cfg.sft_aux is not None else 0.0
    mean = 0.0
    for index in range(step.demo_slots):
        with grad_sync(trainer.forward_module, trainer.rank, first_slot + index == last):
            if index >= len(step.demo_batches):
                empty_pass(trainer)
                continue
            batch = step.demo_batches[index]
            share = float(batch.loss_mask.sum()) / step.demo_tokens
            trainer._use_attention(trainer.model, batch)
            with trainer._autocast():
                logp, _ = trainer.forward_module(batch, only=batch.loss_mask)
            loss, _ = sft_loss(logp, None, None, batch.loss_mask)
            trainer._backward(loss * (weight * share))
            mean += float(loss.detach()) * share
        trainer._housekeeping()
    return sum_over_ranks(mean) if trainer.rank.distributed else mean


def micro_batch_pass(
    trainer: Trainer, step: PreparedStep, index: int, olds: list[torch.Tensor]
) -> dict[str, float]:
    """Forward, loss and backward of micro-batch ``index``, weighted by its share of
    the step's loss; returns its metrics. The first pass over a micro-batch fixes its
    π_old (appended to ``olds``) and measures the sampler's mismatch; with a
    ``sampler_correction`` each pass weights the tokens by min(π_old/π_sampler, cap)."""
    spec = trainer.spec
    mb, batch = step.micro_batches[index], step.batches[index]
    mask = batch.loss_mask
    if spec.loss_agg_mode != "token-mean":
        weight = len(mb) / len(step.experiences)
    else:
        weight = float(mask.sum()) / step.total_tokens
    need_logits = spec.entropy_coef > 0
    trainer._use_attention(trainer.model, batch)
    with trainer._autocast():
        logp, logits = trainer.forward_module(batch, with_logits=need_logits, only=batch.loss_mask)
    metrics: dict[str, float] = {}
    own = step.own_rows[index]
    sampler = sampler_logprobs(mb, batch)
    compared = compared_tokens(mask, own, mb, sampler)
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
    ref = step.ref_logprobs[index] if spec.kl_in_loss else None
    loss, loss_metrics = algorithm_loss(spec, logp, olds[index], logits, ref, batch, token_weights)
    trainer._backward(loss * weight)
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
