"""The planner of a step (DESIGN.md's driver side): from experiences to each rank's share.

``StepPlanner.plan`` drops stale experiences, computes advantages (unless an operator
already did), merges step-wise prefixes where the loss allows, cuts the rows into
micro-batches under the row and token budgets, gives each rank its micro-batches
balanced by tokens (``sharding/plan.py``), collates them (prompts shared), marks
which rows take π_old from the learner's own first pass, and carries the step-wide
loss denominators. It runs where the experiences are: in the run's process, whether
the learner is in the same process (``Trainer``) or on ranks (``RankedTrainer``),
which then receive their share as tensors only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from reinforge.algorithms import ADVANTAGE_FNS, AlgorithmSpec, TrainBatch, collate
from reinforge.algorithms.policy_loss import RATIO_FREE_LOSSES
from reinforge.algorithms.spec import NO_ADVANTAGE
from reinforge.algorithms.step_prefixes import TOKEN_LEVEL_LOSSES, merge_step_prefixes
from reinforge.core import Experience
from reinforge.core.metric_names import TRAIN_STALE_DROPPED, train_metric
from reinforge.trainer.micro_batches import order_rows, split_micro_batches
from reinforge.trainer.old_logprobs import sampler_logprobs, trainer_rows
from reinforge.trainer.prepared_step import MicroBatch, RankShare, StepPlan
from reinforge.trainer.sharding import plan as rank_plan
from reinforge.trainer.shared_prompts import share_prompts, sharing_metrics
from reinforge.trainer.staleness import staleness_metrics, versions_behind
from reinforge.trainer.trainer_config import TrainerConfig

#: the reference's token log-probs of collated batches (``[B, L - 1]`` each, on the
#: CPU): what a KL penalty in the reward needs from the learners' reference model
ReferenceScorer = Callable[[list[TrainBatch]], list[torch.Tensor]]


def micro_batches(cfg: TrainerConfig, exps: list[Experience]) -> Iterator[list[Experience]]:
    """``exps`` in micro-batches under the config's row and token budgets."""
    return split_micro_batches(exps, cfg.micro_batch_size, cfg.micro_batch_tokens)


def tokens(micro_batch: Sequence[Experience]) -> int:
    """A micro-batch's tokens, prompt included: what the rank plan balances."""
    return sum(len(e.tokens) for e in micro_batch)


def merges_step_prefixes(cfg: TrainerConfig, spec: AlgorithmSpec) -> bool:
    """Whether step-wise runs train as one row each (``merge_step_prefixes``): only
    where that leaves the loss as it is, a token-mean of token-level terms."""
    return (
        cfg.merge_step_prefixes
        and spec.loss_agg_mode == "token-mean"
        and spec.policy_loss_fn in TOKEN_LEVEL_LOSSES
        and spec.batch_advantages is None
    )


def _usable(exps: Sequence[Experience]) -> list[Experience]:
    return [e for e in exps if e.response_length > 0 and bool(e.action_mask.any())]


class StepPlanner:
    """Plans steps for ``world_size`` learners with ``cfg``'s algorithm and budgets."""

    def __init__(
        self, cfg: TrainerConfig, spec: AlgorithmSpec, *, pad_token_id: int, world_size: int = 1
    ) -> None:
        self.cfg = cfg
        self.spec = spec
        self.pad_token_id = pad_token_id
        self.world_size = world_size

    def collate(self, exps: list[Experience]) -> TrainBatch:
        """``exps`` as one batch of CPU tensors, with a shared-prompt layout where it pays."""
        return share_prompts(collate(exps, self.pad_token_id), self.cfg.share_prompts)

    def usable_experiences(
        self, exps: Sequence[Experience], model_version: int
    ) -> tuple[list[Experience], int]:
        """The fresh experiences with an action token to train on, in training order,
        and how many were dropped as stale (``trainer.max_staleness``)."""
        limit = self.cfg.max_staleness
        fresh = list(exps)
        if limit is not None:
            fresh = [e for e in exps if versions_behind(e, model_version) <= limit]
        # the summed gradient does not depend on the order (each micro-batch is
        # weighted by its share of the batch): by length, groups together to share prompts
        return order_rows(_usable(fresh), by_prompt=self.cfg.share_prompts), len(exps) - len(fresh)

    def plan(
        self,
        experiences: Sequence[Experience],
        model_version: int,
        demonstrations: Sequence[Experience] | None = None,
        reference: ReferenceScorer | None = None,
    ) -> StepPlan:
        """Each rank's share of a step on ``experiences`` for learners at
        ``model_version``; ``demonstrations`` add the SFT term of ``trainer.sft_aux``.
        ``reference`` scores batches with the reference model: needed only when the
        algorithm puts a KL penalty into the reward."""
        exps, stale = self.usable_experiences(experiences, model_version)
        metrics: dict[str, float] = {TRAIN_STALE_DROPPED: float(stale)}
        metrics.update(staleness_metrics(experiences, model_version))
        if not exps:
            return StepPlan(shares=[], metrics=metrics)
        usable = len(exps)
        metrics.update({train_metric(k): v for k, v in self.advantages(exps, reference).items()})
        if merges_step_prefixes(self.cfg, self.spec):
            exps = order_rows(merge_step_prefixes(exps), by_prompt=self.cfg.share_prompts)
        every = list(micro_batches(self.cfg, exps))
        needed = self.spec.policy_loss_fn not in RATIO_FREE_LOSSES
        own = trainer_rows(exps, model_version, self.cfg.old_logprobs, needed)
        planned: list[MicroBatch] = []
        for mb in every:
            rows, own = own[: len(mb)], own[len(mb) :]
            planned.append(self._micro_batch(mb, rows))
        batches = [mb.batch for mb in planned]
        metrics.update(sharing_metrics(batches, self.cfg, self.spec))
        assigned = rank_plan.assign([tokens(mb) for mb in every], self.world_size)
        demos = self._demonstrations(demonstrations)
        total = float(sum(int(e.action_mask.sum()) for e in exps))
        shares = [
            RankShare(
                micro_batches=[planned[i] for i in mine],
                total_tokens=total,
                total_rows=len(exps),
                slots=rank_plan.slot_count(assigned),
                **demos[rank],
            )
            for rank, mine in enumerate(assigned)
        ]
        return StepPlan(shares, metrics, experiences=usable, rows=len(exps), tokens=total)

    def _micro_batch(self, exps: list[Experience], own: list[bool]) -> MicroBatch:
        batch = self.collate(exps)
        sampler = None if batch.old_logprobs is not None else sampler_logprobs(exps, batch)
        return MicroBatch(
            batch=batch,
            own_rows=torch.tensor(own, dtype=torch.bool),
            sampled_rows=torch.tensor([e.logprobs is not None for e in exps], dtype=torch.bool),
            sampler=sampler,
        )

    def advantages(
        self, exps: list[Experience], reference: ReferenceScorer | None = None
    ) -> dict[str, float]:
        """Fill in ``exps``' advantages (unless an operator already did); returns the
        advantage function's metrics. A KL penalty in the reward scores every experience
        with the reference first (``reference``, micro-batch by micro-batch)."""
        spec = self.spec
        if spec.advantage_fn == NO_ADVANTAGE or all(e.advantages is not None for e in exps):
            return {}
        if spec.batch_advantages is not None:
            return {}  # computed per micro-batch from pi_old (learner_passes.micro_batch_pass)
        args = dict(spec.advantage_args)
        if spec.kl_in_reward:
            if reference is None:
                raise ValueError("a KL penalty in the reward needs the reference's log-probs")
            groups = list(micro_batches(self.cfg, exps))
            scored = reference([self.collate(mb) for mb in groups])
            ref = []
            for mb, logp in zip(groups, scored, strict=True):
                for row, exp in enumerate(mb):
                    start = exp.prompt_length - 1
                    ref.append(logp[row, start : start + exp.response_length].clone())
            args.update(ref_logprobs=ref, kl_penalty=spec.kl_penalty, kl_coef=spec.kl_coef)
        return ADVANTAGE_FNS.get(spec.advantage_fn)(exps, **args)

    def _demonstrations(self, demos: Sequence[Experience] | None) -> list[dict[str, Any]]:
        """Per rank, ``RankShare``'s demonstration fields: its micro-batches, the passes
        every rank runs for them, and the whole step's demonstration tokens and count."""
        none: list[dict[str, Any]] = [{} for _ in range(self.world_size)]
        if not demos:
            return none
        aux = self.cfg.sft_aux
        if aux is None:
            raise ValueError("demonstrations were given, but trainer.sft_aux is not set")
        if aux.weight == 0:
            return none  # exactly plain RL: not even a forward pass
        usable = sorted(_usable(demos), key=lambda e: len(e.tokens))
        every = list(micro_batches(self.cfg, usable))
        assigned = rank_plan.assign([tokens(mb) for mb in every], self.world_size)
        common = {
            "demo_slots": rank_plan.slot_count(assigned),
            "demo_tokens": float(sum(int(e.action_mask.sum()) for e in usable)),
            "demo_count": len(usable),
        }
        return [
            {"demo_batches": [self.collate(every[i]) for i in mine], **common} for mine in assigned
        ]
