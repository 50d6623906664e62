"""The trainer: one optimiser step of an RL (or SFT) algorithm on a batch of experiences.

Per step: drop stale experiences, compute advantages (unless an operator already
did), split the batch into micro-batches, and for each: forward pass, token
log-probabilities, policy loss (+ KL loss + entropy bonus), backward with the
micro-batch's share of the batch loss. Then clip gradients and step AdamW with a
linear warm-up. π_old of the importance ratio is the trainer's own first-pass
log-prob for experiences sampled by the current weights (no extra forward pass),
the engine's reported log-prob for older ones (``old_logprobs.py``); a reference
model is loaded only when the algorithm has a KL term.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.checkpoint import checkpoint

from reinforge.algorithms import (
    ADVANTAGE_FNS,
    POLICY_LOSS_FNS,
    AlgorithmSpec,
    collate,
    entropy_bonus,
    kl_loss_term,
    resolve_algorithm,
)
from reinforge.algorithms.policy_loss import RATIO_FREE_LOSSES
from reinforge.algorithms.spec import NO_ADVANTAGE
from reinforge.core import Experience
from reinforge.trainer.attention import pick_attention, use_attention
from reinforge.trainer.host_memory import release_free_memory
from reinforge.trainer.old_logprobs import (
    old_logprobs,
    sampler_logprobs,
    sampler_mismatch,
    trainer_rows,
)
from reinforge.trainer.policy_model import load_policy, merged_state_dict, trainable_parameters
from reinforge.trainer.trainer_config import TrainerConfig

logger = logging.getLogger(__name__)


#: positions per chunk of the vocabulary projection: 256 x 49,152 logits are ~125 MB
#: in flight (bf16 logits, fp32 copy, log-softmax), however many positions a batch has
VOCAB_CHUNK = 256


def _pick_logprobs(head: Any, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    logits = head(hidden).float()
    return torch.log_softmax(logits, dim=-1).gather(-1, targets[:, None])[:, 0]


def _vocab_logprobs(head: Any, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log p(target) at each row of ``hidden``, projected onto the vocabulary
    ``VOCAB_CHUNK`` rows at a time. With gradients each chunk is checkpointed: only its
    hidden states are kept and backward recomputes its logits, so the
    positions x vocabulary tensors never all exist at once (they were the largest
    transient of a step: ~0.3 GB for 500 positions)."""
    parts = []
    for start in range(0, hidden.shape[0], VOCAB_CHUNK):
        args = (head, hidden[start : start + VOCAB_CHUNK], targets[start : start + VOCAB_CHUNK])
        if torch.is_grad_enabled() and hidden.requires_grad:
            parts.append(checkpoint(_pick_logprobs, *args, use_reentrant=False))
        else:
            parts.append(_pick_logprobs(*args))
    return torch.cat(parts) if parts else hidden.new_zeros(0, dtype=torch.float32)


def _packed_logprobs(
    model: Any, batch: dict[str, torch.Tensor], only: torch.Tensor
) -> torch.Tensor:
    """``token_logprobs`` for the columns in ``only`` (others 0): the decoder runs on the
    whole batch, but the vocabulary projection and log-softmax only on those columns,
    with no prompt or padding positions in between."""
    input_ids = batch["input_ids"]
    hidden = model.get_decoder()(
        input_ids=input_ids,
        attention_mask=batch["attention_mask"],
        position_ids=batch["position_ids"],
        use_cache=False,
    ).last_hidden_state
    picked = _vocab_logprobs(
        model.get_output_embeddings(), hidden[:, :-1][only], input_ids[:, 1:][only]
    )
    logp = picked.new_zeros(only.shape)
    logp[only] = picked
    return logp


def token_logprobs(
    model: Any,
    batch: dict[str, torch.Tensor],
    with_logits: bool = False,
    only: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """log p(token j+1 | tokens <= j) for the columns j of a collated batch.

    With ``only`` (a bool mask of columns, e.g. the batch's ``response_mask``) the
    vocabulary projection runs on exactly those columns. Otherwise logits are
    computed from the first column any row's response needs (``logits_to_keep``):
    the projection of prompt positions, often half the tokens, is skipped. Columns
    not computed are returned as zeros (masked out).
    """
    if only is not None and not with_logits:
        return _packed_logprobs(model, batch, only), None
    input_ids = batch["input_ids"]
    width = input_ids.shape[1] - 1
    first = int(batch["prompt_lengths"].min()) - 1 if "prompt_lengths" in batch else 0
    first = max(0, min(first, width - 1))
    keep = torch.arange(first, width, device=input_ids.device)
    logits = model(
        input_ids=input_ids,
        attention_mask=batch["attention_mask"],
        position_ids=batch["position_ids"],
        use_cache=False,
        logits_to_keep=keep,
    ).logits.float()
    part = torch.log_softmax(logits, dim=-1).gather(-1, input_ids[:, first + 1 :, None])[..., 0]
    logp = part.new_zeros(input_ids.shape[0], width)
    logp[:, first:] = part
    if not with_logits:
        return logp, None
    full = logits.new_zeros(input_ids.shape[0], width, logits.shape[-1])
    full[:, first:] = logits
    return logp, full


class Trainer:
    """Owns the trainable policy, the optimiser and (when needed) the frozen reference."""

    def __init__(
        self, model_path: str | Path, cfg: TrainerConfig, *, pad_token_id: int, device: str = "cpu"
    ) -> None:
        torch.manual_seed(cfg.seed)
        self.cfg = cfg
        self.spec: AlgorithmSpec = resolve_algorithm(cfg.algorithm, cfg.algorithm_args)
        self.pad_token_id = pad_token_id
        self.device = device
        self.model = load_policy(model_path, cfg, device)
        self.ref_model = None
        if self.spec.use_reference and not cfg.lora.enabled:
            from transformers import AutoModelForCausalLM

            # under bf16 autocast its matmuls see bf16 weights anyway: store them so
            # (half the memory, no cast per forward); otherwise the policy's dtype
            ref_dtype = (
                torch.bfloat16 if cfg.mixed_precision == "bf16" else getattr(torch, cfg.dtype)
            )
            self.ref_model = (
                AutoModelForCausalLM.from_pretrained(
                    model_path, dtype=ref_dtype, local_files_only=True
                )
                .to(device)
                .eval()
            )
            self.ref_model.requires_grad_(False)
        params = trainable_parameters(self.model)
        self.optimizer = torch.optim.AdamW(
            params, lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay
        )
        warmup = cfg.warmup_steps
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda step: min(1.0, (step + 1) / warmup) if warmup else 1.0
        )
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

    def _ref_logprobs(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        with torch.no_grad(), self._reference() as ref, self._autocast():
            self._use_attention(ref, batch)
            return token_logprobs(ref, batch, only=batch["response_mask"])[0]

    def _use_attention(self, model: Any, batch: dict[str, torch.Tensor]) -> None:
        columns = int(batch["input_ids"].shape[1])
        use_attention(model, pick_attention(self.cfg.attn_implementation, self.device, columns))

    def _autocast(self) -> contextlib.AbstractContextManager:
        """bf16 autocast for forward passes when ``mixed_precision: bf16`` (fp32 master
        weights: the optimizer still updates full-precision parameters).

        Without autocast's cast cache: each weight is used once per forward anyway, and
        the cache would hold a bf16 copy of the whole model until the forward ends."""
        if self.cfg.mixed_precision != "bf16":
            return contextlib.nullcontext()
        device_type = torch.device(self.device).type
        return torch.autocast(device_type=device_type, dtype=torch.bfloat16, cache_enabled=False)

    # ---- one step --------------------------------------------------------------------

    def filter_stale(self, exps: Sequence[Experience]) -> tuple[list[Experience], int]:
        limit = self.cfg.max_staleness
        if limit is None:
            return list(exps), 0
        fresh = [
            e for e in exps if self.model_version - int(e.info.get("model_version", 0)) <= limit
        ]
        return fresh, len(exps) - len(fresh)

    def _advantages(self, exps: list[Experience]) -> dict[str, float]:
        spec = self.spec
        if spec.advantage_fn == NO_ADVANTAGE or all(e.advantages is not None for e in exps):
            return {}
        args = dict(spec.advantage_args)
        if spec.kl_in_reward:
            ref = []
            for mb in self._micro_batches(exps):
                batch = collate(mb, self.pad_token_id)
                logp = self._ref_logprobs(batch)
                for row, exp in enumerate(mb):
                    start = exp.prompt_length - 1
                    ref.append(logp[row, start : start + exp.response_length].clone())
            args.update(ref_logprobs=ref, kl_penalty=spec.kl_penalty, kl_coef=spec.kl_coef)
        return ADVANTAGE_FNS.get(spec.advantage_fn)(exps, **args)

    def _micro_batches(self, exps: list[Experience]) -> Iterator[list[Experience]]:
        size = self.cfg.micro_batch_size
        for i in range(0, len(exps), size):
            yield exps[i : i + size]

    def train_step(
        self,
        experiences: Sequence[Experience],
        on_micro_batch: Callable[[int, int], None] | None = None,
    ) -> dict[str, float]:
        """One optimiser step (``update_epochs`` passes) on ``experiences``; returns metrics.
        ``on_micro_batch(k, n)`` is called after each of the ``n`` micro-batch passes."""
        start = time.monotonic()
        release_free_memory()  # what sampling and the last sync left behind
        exps, stale = self.filter_stale(experiences)
        metrics: dict[str, float] = {"train/stale_dropped": float(stale)}
        exps = [e for e in exps if e.response_length > 0 and bool(e.action_mask.any())]
        # micro-batches of similar lengths pad less; the summed gradient does not
        # depend on the order (each micro-batch is weighted by its share of the batch)
        exps.sort(key=lambda e: len(e.tokens))
        if not exps:
            logger.warning("train step %d skipped: no usable experiences", self.global_step + 1)
            return {**metrics, "train/skipped": 1.0}
        metrics.update({f"train/{k}": v for k, v in self._advantages(exps).items()})
        spec = self.spec
        loss_fn = POLICY_LOSS_FNS.get(spec.policy_loss_fn)
        seq_modes = spec.loss_agg_mode != "token-mean"
        total_tokens = float(sum(int(e.action_mask.sum()) for e in exps))
        collected: dict[str, list[float]] = {}
        grad_norm = 0.0
        micro_batches = list(self._micro_batches(exps))
        batches = [collate(mb, self.pad_token_id) for mb in micro_batches]  # every epoch's
        passes = len(batches) * self.cfg.update_epochs
        # the reference's forwards run before any policy forward: then their logits
        # never sit in memory beside the policy's gradients and autograd graph
        ref_logprobs = [self._ref_logprobs(b) for b in batches] if spec.kl_in_loss else []
        needed = spec.policy_loss_fn not in RATIO_FREE_LOSSES
        own = trainer_rows(exps, self.model_version, self.cfg.old_logprobs, needed)
        own_rows = torch.tensor(own).split(self.cfg.micro_batch_size)  # as _micro_batches
        olds: list[torch.Tensor] = []  # pi_old per micro-batch, fixed by the first pass
        done = 0
        for epoch in range(self.cfg.update_epochs):
            self.optimizer.zero_grad(set_to_none=True)
            for index, (mb, batch) in enumerate(zip(micro_batches, batches, strict=True)):
                mask = batch["loss_mask"]
                weight = len(mb) / len(exps) if seq_modes else float(mask.sum()) / total_tokens
                need_logits = spec.entropy_coef > 0
                self._use_attention(self.model, batch)
                with self._autocast():
                    logp, logits = token_logprobs(
                        self.model, batch, with_logits=need_logits, only=batch["response_mask"]
                    )
                if epoch == 0:
                    sampler = sampler_logprobs(mb, batch)
                    olds.append(old_logprobs(logp, sampler, own_rows[index]))
                    compared = mask & own_rows[index][:, None]
                    if sampler is not None:
                        compared &= torch.tensor([e.logprobs is not None for e in mb])[:, None]
                    for key, value in sampler_mismatch(logp, sampler, compared).items():
                        collected.setdefault(key, []).append(value)
                old = olds[index]
                loss, mb_metrics = loss_fn(
                    logp,
                    old,
                    batch.get("advantages"),
                    mask,
                    loss_agg_mode=spec.loss_agg_mode,
                    **spec.policy_loss_args,
                )
                if spec.kl_in_loss:
                    kl, kl_metrics = kl_loss_term(
                        logp,
                        ref_logprobs[index],
                        mask,
                        spec.kl_loss,
                        spec.kl_loss_coef,
                        spec.loss_agg_mode,
                    )
                    loss = loss + kl
                    mb_metrics.update(kl_metrics)
                if need_logits:
                    ent, ent_metrics = entropy_bonus(
                        logits, mask, spec.entropy_coef, spec.loss_agg_mode
                    )
                    loss = loss + ent
                    mb_metrics.update(ent_metrics)
                (loss * weight).backward()
                mb_metrics["loss"] = float(loss.detach())
                for key, value in mb_metrics.items():
                    collected.setdefault(key, []).append(float(value))
                done += 1
                release_free_memory()
                if on_micro_batch is not None:
                    on_micro_batch(done, passes)
            params = trainable_parameters(self.model)
            # with no clipping configured the norm is still measured (inf = never clip),
            # so it is reported and a non-finite gradient still skips the update
            limit = self.cfg.max_grad_norm if self.cfg.max_grad_norm is not None else math.inf
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, limit))
            if not math.isfinite(grad_norm):
                logger.warning("non-finite gradient norm; optimiser step skipped")
                self.optimizer.zero_grad(set_to_none=True)
                metrics["train/nonfinite_grad"] = 1.0
                continue
            self.optimizer.step()
            # gradients are dead weight until the next backward (the size of the model
            # in fp32): free them now, so the engine's sampling in between has that room
            self.optimizer.zero_grad(set_to_none=True)
            release_free_memory()
        self.scheduler.step()
        self.global_step += 1
        self.model_version += 1
        metrics.update({f"train/{k}": float(np.mean(v)) for k, v in collected.items()})
        metrics.update(
            {
                "train/grad_norm": grad_norm,
                "train/lr": self.scheduler.get_last_lr()[0],
                "train/experiences": float(len(exps)),
                "train/tokens": total_tokens,
                "train/step_time": time.monotonic() - start,
                "train/samples_per_min": 60.0 * len(exps) / max(time.monotonic() - start, 1e-9),
            }
        )
        return metrics

    @property
    def is_lora(self) -> bool:
        return self.cfg.lora.enabled

    def weights_for_sync(self) -> dict[str, torch.Tensor]:
        return merged_state_dict(self.model)
