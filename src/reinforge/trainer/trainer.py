"""The trainer: one optimiser step of an RL (or SFT) algorithm on a batch of experiences.

A step has two phases. Preparation (``Trainer.prepare``) uses the weights as they
are: drop stale experiences, compute advantages (unless an operator already did),
sort by length and split into micro-batches, collate them, and compute the
reference's log-probs and which rows take π_old from the trainer's own first pass.
The update (``Trainer.update``) changes them: for each micro-batch a forward pass,
token log-probabilities, policy loss (+ KL loss + entropy bonus) and backward with
the micro-batch's share of the batch loss; then gradient clipping and one AdamW step
with a linear warm-up. π_old of the importance ratio is the trainer's own first-pass
log-prob for experiences sampled by the current weights (no extra forward pass), the
engine's reported log-prob for older ones (``old_logprobs.py``); a reference model is
loaded only when the algorithm has a KL term.

The planner's helpers (advantages, micro-batching, demonstrations) live in
``step_planner.py``, the learner's passes and loss in ``learner_passes.py``, and the
optimiser's construction in ``optimizer.py``; ``Trainer`` holds the state and the order.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from reinforge.algorithms import (
    AlgorithmSpec,
    TrainBatch,
    collate,
    resolve_algorithm,
)
from reinforge.algorithms.policy_loss import RATIO_FREE_LOSSES
from reinforge.algorithms.step_prefixes import merge_step_prefixes
from reinforge.core import Experience
from reinforge.core.metric_names import (
    SFT_AUX_EXPERIENCES,
    SFT_AUX_LOSS,
    TRAIN_EXPERIENCES,
    TRAIN_GRAD_NORM,
    TRAIN_LR,
    TRAIN_NONFINITE_GRAD,
    TRAIN_ROWS,
    TRAIN_SAMPLES_PER_MIN,
    TRAIN_STALE_DROPPED,
    TRAIN_STEP_TIME,
    TRAIN_TOKENS,
    TRAIN_WORLD_SIZE,
    train_metric,
)
from reinforge.core.precision import resolve_mixed_precision, warn_if_emulated
from reinforge.trainer import learner_passes, step_planner
from reinforge.trainer.attention import pick_attention, use_attention
from reinforge.trainer.device import resolve_device
from reinforge.trainer.host_memory import release_free_memory
from reinforge.trainer.micro_batches import order_rows
from reinforge.trainer.old_logprobs import trainer_rows
from reinforge.trainer.optimizer import build_optimizer
from reinforge.trainer.policy_model import start_models, trainable_parameters
from reinforge.trainer.prepared_step import PreparedStep
from reinforge.trainer.sharding import plan as rank_plan
from reinforge.trainer.sharding.rank_metrics import (
    gather_micro_batch_values,
    rank_times,
)
from reinforge.trainer.sharding.strategy import SINGLE, RankContext, make_strategy
from reinforge.trainer.shared_prompts import share_prompts, sharing_metrics
from reinforge.trainer.staleness import staleness_metrics, versions_behind
from reinforge.trainer.step_result import StepResult
from reinforge.trainer.trainer_config import TrainerConfig

logger = logging.getLogger(__name__)


class Trainer:
    """Owns the trainable policy, the optimiser and (when needed) the frozen reference."""

    def __init__(
        self,
        model_path: str | Path,
        cfg: TrainerConfig,
        *,
        pad_token_id: int,
        device: str | None = None,
        rank: RankContext = SINGLE,
        init_weights: dict[str, torch.Tensor] | None = None,
    ) -> None:
        """``device`` overrides ``cfg.device``; ``rank`` places this process among the
        trainer's ranks (its process group already joined); ``init_weights`` (full,
        base-model names) start the policy and reference from other weights."""
        torch.manual_seed(cfg.seed)
        self.cfg = cfg
        self.spec: AlgorithmSpec = resolve_algorithm(cfg.algorithm, cfg.algorithm_args)
        self.pad_token_id = pad_token_id
        self.rank = rank
        # an explicit device is this rank's own; cfg.device is shifted by the rank
        offset = 0 if device or not rank.distributed else rank.rank
        self.device = resolve_device(device or cfg.device, offset)
        #: ``cfg.mixed_precision`` with ``auto`` resolved for this device ("no", "bf16", "fp16")
        self.mixed_precision = resolve_mixed_precision(cfg.mixed_precision, self.device)
        if cfg.dtype == "bfloat16":
            warn_if_emulated(self.device, "trainer.dtype: bfloat16")
        #: how the policy spreads over the ranks (``sharding/strategy.py``)
        self.strategy = make_strategy(rank, torch.device(self.device), self.mixed_precision)
        started = start_models(
            model_path,
            cfg,
            self.strategy,
            use_reference=self.spec.use_reference,
            init_weights=init_weights,
        )
        self.model, self.ref_model = started.model, started.ref_model
        #: the policy as every forward pass calls it (DDP / FSDP2 wrapped on several ranks)
        self.forward_module = started.forward_module
        self._ref_forward = started.ref_forward
        self.optimizer, self.scheduler = build_optimizer(self.model, cfg)
        self.scaler = self.strategy.grad_scaler()
        self.global_step = 0
        self.model_version = 0

    # ---- reference model -------------------------------------------------------------

    @contextlib.contextmanager
    def _reference(self) -> Iterator[Any]:
        """The frozen reference: a separate model, or the LoRA base with adapters disabled."""
        if self.ref_model is not None:
            yield self.ref_model
        else:
            with self.model.disable_adapter():
                yield self.model

    def _ref_logprobs(self, batch: TrainBatch) -> torch.Tensor:
        with torch.no_grad(), self._reference() as ref, self._autocast():
            self._use_attention(ref, batch)
            if ref is self.model:  # LoRA's base: through the wrapper (its shards)
                return self.forward_module(batch, only=batch.response_mask)[0]
            return self._ref_forward(batch, only=batch.response_mask)[0]

    def _housekeeping(self) -> None:
        """Hand freed host memory back to the OS; on a GPU the host barely churns."""
        if torch.device(self.device).type == "cpu":
            release_free_memory()

    def _use_attention(self, model: Any, batch: TrainBatch) -> None:
        columns = int(batch.input_ids.shape[1])
        use_attention(model, pick_attention(self.cfg.attn_implementation, self.device, columns))

    def _autocast(self) -> contextlib.AbstractContextManager:
        """bf16 (or fp16) autocast for forward passes under ``mixed_precision`` (fp32
        master weights: the optimizer still updates full-precision parameters).

        Without autocast's cast cache: each weight is used once per forward anyway, and
        the cache would hold a bf16 copy of the whole model until the forward ends."""
        if self.mixed_precision not in ("bf16", "fp16"):
            return contextlib.nullcontext()
        dtype = torch.bfloat16 if self.mixed_precision == "bf16" else torch.float16
        device_type = torch.device(self.device).type
        return torch.autocast(device_type=device_type, dtype=dtype, cache_enabled=False)

    # ---- one step --------------------------------------------------------------------

    def train_step(
        self,
        experiences: Sequence[Experience],
        on_micro_batch: Callable[[int, int], None] | None = None,
        demonstrations: Sequence[Experience] | None = None,
    ) -> StepResult:
        """One optimiser step (``update_epochs`` passes) on ``experiences``: its metrics,
        and whether it was skipped (no usable experience, no weights changed).
        ``on_micro_batch(k, n)`` is called after each of the ``n`` micro-batch passes.
        ``demonstrations`` add the SFT term of ``trainer.sft_aux`` to the step's loss."""
        start = time.monotonic()
        self._housekeeping()  # what sampling and the last sync left behind
        exps, stale = self.usable_experiences(experiences)
        metrics: dict[str, float] = {TRAIN_STALE_DROPPED: float(stale)}
        metrics.update(staleness_metrics(experiences, self.model_version))
        if not exps:
            logger.warning("train step %d skipped: no usable experiences", self.global_step + 1)
            return StepResult.skip(metrics)
        prepared = self.prepare(exps, demonstrations)
        metrics.update(prepared.metrics)
        metrics.update(self.update(prepared, on_micro_batch))
        self.global_step += 1
        self.model_version += 1
        metrics.update(
            {
                TRAIN_LR: self.scheduler.get_last_lr()[0],
                TRAIN_EXPERIENCES: float(len(exps)),
                TRAIN_ROWS: float(len(prepared.experiences)),
                TRAIN_TOKENS: prepared.total_tokens,
                TRAIN_STEP_TIME: time.monotonic() - start,
                TRAIN_SAMPLES_PER_MIN: 60.0 * len(exps) / max(time.monotonic() - start, 1e-9),
                TRAIN_WORLD_SIZE: float(self.rank.world_size),
            }
        )
        return StepResult(skipped=False, metrics=metrics)

    # ---- preparation -----------------------------------------------------------------

    def filter_stale(self, exps: Sequence[Experience]) -> tuple[list[Experience], int]:
        limit = self.cfg.max_staleness
        if limit is None:
            return list(exps), 0
        fresh = [e for e in exps if versions_behind(e, self.model_version) <= limit]
        return fresh, len(exps) - len(fresh)

    def usable_experiences(self, exps: Sequence[Experience]) -> tuple[list[Experience], int]:
        """The fresh experiences with an action token to train on, sorted by length, and
        how many were dropped as stale."""
        fresh, stale = self.filter_stale(exps)
        usable = [e for e in fresh if e.response_length > 0 and bool(e.action_mask.any())]
        # the summed gradient does not depend on the order (each micro-batch is
        # weighted by its share of the batch): by length, groups together to share prompts
        return order_rows(usable, by_prompt=self.cfg.share_prompts), stale

    def prepare(
        self, exps: list[Experience], demonstrations: Sequence[Experience] | None = None
    ) -> PreparedStep:
        """The preparation phase on ``exps`` (from ``usable_experiences``): advantages, this
        rank's micro-batches (``sharding.plan``) and their tensors on the device, the
        reference's log-probs, and where π_old comes from; ``demonstrations`` are
        collated for the auxiliary SFT term."""
        spec = self.spec
        advantage_metrics = {
            train_metric(k): v for k, v in step_planner.advantages(self, exps).items()
        }
        if step_planner.merges_step_prefixes(self.cfg, spec):
            exps = order_rows(merge_step_prefixes(exps), by_prompt=self.cfg.share_prompts)
        every = list(step_planner.micro_batches(self.cfg, exps))
        plan = rank_plan.assign([step_planner.tokens(mb) for mb in every], self.rank.world_size)
        mine = plan[self.rank.rank]
        micro_batches = [every[i] for i in mine]
        batches = [self._collate(mb) for mb in micro_batches]  # every epoch's
        # the reference's forwards run before any policy forward: then their logits
        # never sit in memory beside the policy's gradients and autograd graph
        ref_logprobs = [self._ref_logprobs(b) for b in batches] if spec.kl_in_loss else []
        if spec.kl_in_loss and (self.ref_model is None or self.strategy.sharded):
            for _ in range(rank_plan.slot_count(plan) - len(mine)):
                self._ref_logprobs(self._empty_batch())  # pair up the sharded forwards
        needed = spec.policy_loss_fn not in RATIO_FREE_LOSSES
        own = torch.tensor(trainer_rows(exps, self.model_version, self.cfg.old_logprobs, needed))
        own_rows = list(own.split([len(mb) for mb in every]))
        demos = step_planner.demonstration_batches(self, demonstrations)
        return PreparedStep(
            experiences=exps,
            micro_batches=micro_batches,
            batches=batches,
            ref_logprobs=ref_logprobs,
            own_rows=[own_rows[i].to(self.device) for i in mine],
            total_tokens=float(sum(int(e.action_mask.sum()) for e in exps)),
            metrics={**advantage_metrics, **sharing_metrics(batches, self.cfg, self.spec)},
            slots=rank_plan.slot_count(plan),
            **demos,
        )

    def _collate(self, exps: list[Experience]) -> TrainBatch:
        batch = collate(exps, self.pad_token_id)
        return share_prompts(batch, self.cfg.share_prompts).to(self.device)

    def _empty_batch(self) -> TrainBatch:
        """A two-token batch with nothing to train on: a rank's pass that adds no
        gradient but takes part in the ranks' collectives."""
        exp = Experience(
            tokens=torch.tensor([self.pad_token_id, self.pad_token_id]),
            prompt_length=1,
            action_mask=torch.zeros(1, dtype=torch.bool),
        )
        return self._collate([exp])

    # ---- update ----------------------------------------------------------------------

    def update(
        self, step: PreparedStep, on_micro_batch: Callable[[int, int], None] | None = None
    ) -> dict[str, float]:
        """The update phase: ``update_epochs`` passes over the micro-batches, each
        followed by one optimiser step, then the learning-rate schedule's step. Returns
        the micro-batch metrics (of every rank) averaged over the passes, and the last
        gradient norm. On several ranks each runs ``step.slots`` passes per epoch
        (empty ones where it has fewer micro-batches) and the gradients are summed."""
        start = time.monotonic()
        metrics: dict[str, float] = {}
        collected: dict[str, list[float]] = {}
        olds: list[torch.Tensor] = []  # pi_old per micro-batch, fixed by the first pass
        passes = step.slots * self.cfg.update_epochs
        grad_norm = 0.0
        done = 0
        for _ in range(self.cfg.update_epochs):
            self.optimizer.zero_grad(set_to_none=True)
            last = step.slots + step.demo_slots - 1
            for index in range(step.slots):
                with self.strategy.grad_sync(self.forward_module, index == last):
                    if index < len(step.batches):
                        for key, value in learner_passes.micro_batch_pass(
                            self, step, index, olds
                        ).items():
                            collected.setdefault(key, []).append(float(value))
                    else:
                        learner_passes.empty_pass(self)
                done += 1
                self._housekeeping()
                if on_micro_batch is not None:
                    on_micro_batch(done, passes)
            if step.demo_slots:
                collected.setdefault(SFT_AUX_LOSS, []).append(
                    learner_passes.demonstration_passes(
                        self, step, first_slot=step.slots, last=last
                    )
                )
            grad_norm = self._optimizer_step()
            if not math.isfinite(grad_norm):
                metrics[TRAIN_NONFINITE_GRAD] = 1.0
        self.scheduler.step()
        if self.rank.distributed:
            collected = gather_micro_batch_values(collected)
            metrics.update(rank_times(time.monotonic() - start))
        metrics.update(
            {train_metric(k): learner_passes.over_micro_batches(k, v) for k, v in collected.items()}
        )
        metrics[TRAIN_GRAD_NORM] = grad_norm
        if step.demo_slots:
            metrics[train_metric(SFT_AUX_EXPERIENCES)] = float(step.demo_count)
        return metrics

    def _backward(self, loss: torch.Tensor) -> None:
        """Backward of a rank's part of the step's loss. DDP and FSDP2 average the
        ranks' gradients; the ranks' parts add up to the loss, so each is scaled by
        the world size to make that average their sum."""
        loss = loss * self.rank.world_size if self.rank.distributed else loss
        if self.scaler is not None:
            loss = self.scaler.scale(loss)
        loss.backward()

    def _optimizer_step(self) -> float:
        """Clip the gradients and step the optimiser; returns the gradient norm. A
        non-finite norm skips the optimiser step (the gradients are dropped; under fp16
        the gradient scaler lowers its scale)."""
        params = trainable_parameters(self.model)
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)
        # with no clipping configured the norm is still measured (inf = never clip),
        # so it is reported and a non-finite gradient still skips the update
        limit = self.cfg.max_grad_norm if self.cfg.max_grad_norm is not None else math.inf
        grad_norm = self.strategy.clip_grad_norm(params, limit)
        if not math.isfinite(grad_norm):
            logger.warning("non-finite gradient norm; optimiser step skipped")
            if self.scaler is not None:
                self.scaler.update()
            self.optimizer.zero_grad(set_to_none=True)
            return grad_norm
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        # gradients are dead weight until the next backward (the size of the model
        # in fp32): free them now, so the engine's sampling in between has that room
        self.optimizer.zero_grad(set_to_none=True)
        self._housekeeping()
        return grad_norm

    @property
    def is_lora(self) -> bool:
        return self.cfg.lora.enabled

    def weights_for_sync(self) -> dict[str, torch.Tensor]:
        """The policy's full weights (LoRA merged, base-model names) for an engine. On
        sharded ranks a collective: every rank calls it, rank 0 gets the weights."""
        return self.strategy.sync_weights(self.model)

    def weight_buckets(self, bucket_bytes: int) -> Iterator[dict[str, torch.Tensor]]:
        """The same weights as ``weights_for_sync`` in buckets of at most ``bucket_bytes``
        (``weight_stream``). On sharded ranks a collective that every rank runs to its
        end; only rank 0's yields tensors."""
        from reinforge.trainer.weight_stream import full_weight_buckets

        return full_weight_buckets(self.model, bucket_bytes=bucket_bytes, keep=self.rank.is_main)

    def save_checkpoint(self, folder: Path) -> dict[str, Any]:
        """Write weights, optimizer and scheduler into ``folder`` (``checkpoint.py``)."""
        from reinforge.trainer.checkpoint import save_trainer

        return save_trainer(self, folder)

    def load_checkpoint(self, folder: Path, state: dict[str, Any]) -> None:
        from reinforge.trainer.checkpoint import load_trainer

        load_trainer(self, folder, state)

    def save_adapter(self, folder: str | Path) -> None:
        """The LoRA adapter in peft's format (rank 0 writes it; a collective when sharded)."""
        from reinforge.trainer.checkpoint import save_policy

        save_policy(self, Path(folder))

    def state_bytes(self) -> int:
        """Bytes of trainable parameters, gradients and optimizer state in this process."""
        from reinforge.trainer.sharding.rank_metrics import training_state_bytes

        return training_state_bytes(self.model, self.optimizer)

    def close(self) -> None:
        """Nothing to release in process (the handle of several ranks stops them)."""
