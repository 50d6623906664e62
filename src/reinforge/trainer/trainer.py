"""The trainer: the policy's weights on this process, and one step of an RL (or SFT)
algorithm on a batch of experiences.

A step has two halves. The planner (``step_planner.py``, ``StepPlanner``) uses the
weights as they are: drop stale experiences, compute advantages (unless an operator
already did), sort by length and split into micro-batches, collate them, and mark
which rows take π_old from the learner's own first pass; it hands each rank a share
of tensors (``prepared_step.py``). The learner (``learner.py``, ``Learner``) changes
them: for each micro-batch a forward pass, token log-probabilities, policy loss
(+ KL loss + entropy bonus) and backward with the micro-batch's share of the batch
loss; then gradient clipping and one AdamW step with a linear warm-up. π_old of the
importance ratio is the learner's own first-pass log-prob for experiences sampled by
the current weights (no extra forward pass), the engine's reported log-prob for
older ones (``old_logprobs.py``); a reference model is loaded only when the
algorithm has a KL term.

In one process ``Trainer.train_step`` is the planner and one learner in turn. On
several ranks (``parallel/ranked_trainer.py``) the planner runs on the driver and
each rank's ``Trainer`` runs ``learn`` on its share only.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from reinforge.algorithms import AlgorithmSpec, TrainBatch, resolve_algorithm
from reinforge.core import Experience
from reinforge.core.metric_names import TRAIN_LR
from reinforge.core.precision import resolve_mixed_precision, warn_if_emulated
from reinforge.trainer.attention import pick_attention, use_attention
from reinforge.trainer.device import resolve_device
from reinforge.trainer.host_memory import release_free_memory
from reinforge.trainer.learner import Learner
from reinforge.trainer.optimizer import build_optimizer
from reinforge.trainer.policy_model import merged_state_dict, start_models
from reinforge.trainer.prepared_step import RankShare, step_result
from reinforge.trainer.sharding.strategy import SINGLE, RankContext, make_strategy
from reinforge.trainer.step_planner import StepPlanner
from reinforge.trainer.step_result import StepResult
from reinforge.trainer.trainer_config import TrainerConfig

logger = logging.getLogger(__name__)


class Trainer:
    """Owns the trainable policy, the optimiser and (when needed) the frozen reference on
    this process; runs a whole step in process (``train_step``) or a rank's update
    (``learn``)."""

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
        #: the driver's half of a step (in this process when there is one rank)
        self.planner = StepPlanner(
            cfg, self.spec, pad_token_id=pad_token_id, world_size=rank.world_size
        )
        #: the rank's half: the update on this process's share
        self.learner = Learner(self)

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

    def reference_logprobs(self, batches: list[TrainBatch]) -> list[torch.Tensor]:
        """The reference's token log-probs of collated ``batches`` (CPU in, CPU out):
        what the planner asks for when the reward holds a KL penalty."""
        return [self._ref_logprobs(b.to(self.device)).cpu() for b in batches]

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
        plan = self.planner.plan(
            experiences, self.model_version, demonstrations, reference=self.reference_logprobs
        )
        if plan.skipped:
            logger.warning("train step %d skipped: no usable experiences", self.global_step + 1)
            return StepResult.skip(plan.metrics)
        learned = self.learn(plan.shares[self.rank.rank], on_micro_batch)
        return step_result(plan, learned, time.monotonic() - start, self.rank.world_size)

    def learn(
        self, share: RankShare, on_micro_batch: Callable[[int, int], None] | None = None
    ) -> dict[str, float]:
        """The update of one step on this process's ``share`` (``learner.py``); the step
        and model version count up. What a trainer rank runs for each step."""
        self._housekeeping()
        learned = self.learner.learn(share, on_micro_batch)
        self.global_step += 1
        self.model_version += 1
        learned[TRAIN_LR] = self.scheduler.get_last_lr()[0]
        return learned

    @property
    def is_lora(self) -> bool:
        return self.cfg.lora.enabled

    @property
    def world_size(self) -> int:
        """This process's ranks: 1 in the run's process, the group's size on a rank."""
        return self.rank.world_size

    @property
    def stopped(self) -> bool:
        """An in-process trainer always takes the next command (``TrainerHandle``)."""
        return False

    def weights_for_sync(self) -> dict[str, torch.Tensor]:
        """The policy's full weights (LoRA merged, base-model names) for an engine. On
        sharded ranks a collective: every rank calls it, rank 0 gets the weights."""
        return self.strategy.sync_weights(self.model)

    def shareable_weights(self) -> dict[str, torch.Tensor] | None:
        """The policy's parameters themselves (base-model names), for an engine of this
        process to read in place (``weight_share``): a full fine-tune in one process. A
        LoRA engine needs merged weights, so None then."""
        if self.is_lora or self.rank.world_size > 1:
            return None
        return merged_state_dict(self.model)  # a full fine-tune's: its state dict

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
