"""The preparation side of a step (DESIGN.md's planner): advantages, step-prefix
merging, micro-batching and the demonstrations' batches.

Split out of ``trainer.py`` so that the trainer stays one class under the house rules;
these read the trainer's config, spec and rank but never change its weights.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from reinforge.algorithms import ADVANTAGE_FNS, AlgorithmSpec
from reinforge.algorithms.spec import NO_ADVANTAGE
from reinforge.algorithms.step_prefixes import TOKEN_LEVEL_LOSSES
from reinforge.core import Experience
from reinforge.trainer.micro_batches import split_micro_batches
from reinforge.trainer.sharding import plan as rank_plan
from reinforge.trainer.trainer_config import TrainerConfig

if TYPE_CHECKING:
    from reinforge.trainer.trainer import Trainer


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


def advantages(trainer: Trainer, exps: list[Experience]) -> dict[str, float]:
    """Fill in ``exps``' advantages (unless an operator already did); returns the
    advantage function's metrics. A KL penalty in the reward scores every experience
    with the reference first (the same forwards on each rank)."""
    spec = trainer.spec
    if spec.advantage_fn == NO_ADVANTAGE or all(e.advantages is not None for e in exps):
        return {}
    if spec.batch_advantages is not None:
        return {}  # computed per micro-batch from pi_old (learner_passes.micro_batch_pass)
    args = dict(spec.advantage_args)
    if spec.kl_in_reward:
        ref = []
        for mb in micro_batches(trainer.cfg, exps):
            logp = trainer._ref_logprobs(trainer._collate(mb)).cpu()
            for row, exp in enumerate(mb):
                start = exp.prompt_length - 1
                ref.append(logp[row, start : start + exp.response_length].clone())
        args.update(ref_logprobs=ref, kl_penalty=spec.kl_penalty, kl_coef=spec.kl_coef)
    return ADVANTAGE_FNS.get(spec.advantage_fn)(exps, **args)


def demonstration_batches(trainer: Trainer, demos: Sequence[Experience] | None) -> dict[str, Any]:
    """``PreparedStep``'s demonstration fields: this rank's micro-batches, the passes
    every rank runs for them, and the whole step's demonstration tokens and count."""
    if not demos:
        return {}
    aux = trainer.cfg.sft_aux
    if aux is None:
        raise ValueError("demonstrations were given, but trainer.sft_aux is not set")
    if aux.weight == 0:
        return {}  # exactly plain RL: not even a forward pass
    usable = sorted(
        (e for e in demos if e.response_length > 0 and bool(e.action_mask.any())),
        key=lambda e: len(e.tokens),
    )
    every = list(micro_batches(trainer.cfg, usable))
    plan = rank_plan.assign([tokens(mb) for mb in every], trainer.rank.world_size)
    total = float(sum(int(e.action_mask.sum()) for e in usable))
    return {
        "demo_batches": [trainer._collate(every[i]) for i in plan[trainer.rank.rank]],
        "demo_slots": rank_plan.slot_count(plan),
        "demo_tokens": total,
        "demo_count": len(usable),
    }
