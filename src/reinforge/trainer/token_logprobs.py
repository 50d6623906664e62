"""Token log-probabilities of a collated batch under a causal LM: the policy's and the
reference's forward pass.

The vocabulary projection is the largest cost and transient of a forward pass, so it
runs only on the columns a loss needs (the response positions), in chunks.

A batch with images (``batch.multi_modal_inputs``) goes through the vision-language
model's full backbone (vision encoder, connector and text model: ``model.model``)
with the same processor tensors the engine sampled with, instead of the text
decoder alone.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.checkpoint import checkpoint

from reinforge.algorithms import TrainBatch
from reinforge.trainer.head_logprobs import fusable_head, head_logprobs
from reinforge.trainer.shared_prompts import SharedPromptBatch, shared_hidden
from reinforge.trainer.target_logprob import target_logprob

#: positions per chunk of the vocabulary projection: in a chunk's backward 256 x 49,152
#: logits are ~50 MB (bf16 logits and their gradient), however many positions a batch has
VOCAB_CHUNK = 256


def _pick_logprobs(head: Any, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return target_logprob(head(hidden), targets)


def _vocab_logprobs(
    head: Any, hidden: torch.Tensor, targets: torch.Tensor, fused_head: bool = False
) -> torch.Tensor:
    """log p(target) at each row of ``hidden``, projected onto the vocabulary
    ``VOCAB_CHUNK`` rows at a time. With gradients each chunk is checkpointed: only its
    hidden states are kept and backward recomputes its logits, so the
    positions x vocabulary tensors never all exist at once (they were the largest
    transient of a step: ~0.3 GB for 500 positions). With ``fused_head`` (one process)
    and a plain linear head, ``head_logprobs`` does the same in one function whose
    weight gradient goes straight into ``.grad``."""
    if fused_head and fusable_head(head) and (hidden.requires_grad or not torch.is_grad_enabled()):
        return head_logprobs(head, hidden, targets, VOCAB_CHUNK)
    parts = []
    for start in range(0, hidden.shape[0], VOCAB_CHUNK):
        args = (head, hidden[start : start + VOCAB_CHUNK], targets[start : start + VOCAB_CHUNK])
        if torch.is_grad_enabled() and hidden.requires_grad:
            parts.append(checkpoint(_pick_logprobs, *args, use_reentrant=False))
        else:
            parts.append(_pick_logprobs(*args))
    return torch.cat(parts) if parts else hidden.new_zeros(0, dtype=torch.float32)


def image_inputs(model: Any, batch: TrainBatch) -> dict[str, torch.Tensor]:
    """The batch's image tensors on the model's device, floating ones in its dtype
    (empty for a text-only batch)."""
    if not batch.multi_modal_inputs:
        return {}
    param = next(model.parameters())
    out = {}
    for name, value in batch.multi_modal_inputs.items():
        value = value.to(param.device)
        out[name] = value.to(param.dtype) if value.is_floating_point() else value
    return out


def _backbone(model: Any, with_images: bool) -> Any:
    """What turns ids (and images) into hidden states: the text decoder, or for a batch
    with images the VLM's whole backbone (``model.model``, under a LoRA wrapper too)."""
    if not with_images:
        return model.get_decoder()
    base = model.get_base_model() if hasattr(model, "peft_config") else model
    return base.model


def _packed_logprobs(
    model: Any, batch: TrainBatch, only: torch.Tensor, fused_head: bool = False
) -> torch.Tensor:
    """``token_logprobs`` for the columns in ``only`` (others 0): the decoder runs on the
    whole batch, but the vocabulary projection and log-softmax only on those columns,
    with no prompt or padding positions in between. A ``SharedPromptBatch`` runs its
    packed rows instead: each shared prompt once (``shared_prompts.py``)."""
    input_ids = batch.input_ids
    images = image_inputs(model, batch)
    backbone = _backbone(model, bool(images))
    shared = None
    if isinstance(batch, SharedPromptBatch) and not images:
        shared = shared_hidden(backbone, batch, only)
    if shared is not None:
        rows, targets = shared
    else:
        hidden = backbone(
            input_ids=input_ids,
            attention_mask=batch.attention_mask,
            position_ids=batch.position_ids,
            use_cache=False,
            **images,
        ).last_hidden_state
        rows, targets = hidden[:, :-1][only], input_ids[:, 1:][only]
    picked = _vocab_logprobs(model.get_output_embeddings(), rows, targets, fused_head)
    logp = picked.new_zeros(only.shape)
    logp[only] = picked
    return logp


def token_logprobs(
    model: Any,
    batch: TrainBatch,
    with_logits: bool = False,
    only: torch.Tensor | None = None,
    fused_head: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """log p(token j+1 | tokens <= j) for the columns j of a collated batch.

    With ``only`` (a bool mask of columns, e.g. the batch's ``response_mask``) the
    vocabulary projection runs on exactly those columns. Otherwise logits are
    computed from the first column any row's response needs (``logits_to_keep``):
    the projection of prompt positions, often half the tokens, is skipped. Columns
    not computed are returned as zeros (masked out). ``fused_head``: the caller is
    the only process training the model, so the head's weight gradient may bypass
    autograd's buffers (``head_logprobs.py``).
    """
    if only is not None and not with_logits:
        return _packed_logprobs(model, batch, only, fused_head), None
    input_ids = batch.input_ids
    width = input_ids.shape[1] - 1
    first = int(batch.prompt_lengths.min()) - 1
    first = max(0, min(first, width - 1))
    keep = torch.arange(first, width, device=input_ids.device)
    logits = model(
        input_ids=input_ids,
        attention_mask=batch.attention_mask,
        position_ids=batch.position_ids,
        use_cache=False,
        logits_to_keep=keep,
        **image_inputs(model, batch),
    ).logits.float()
    part = torch.log_softmax(logits, dim=-1).gather(-1, input_ids[:, first + 1 :, None])[..., 0]
    logp = part.new_zeros(input_ids.shape[0], width)
    logp[:, first:] = part
    if not with_logits:
        return logp, None
    full = logits.new_zeros(input_ids.shape[0], width, logits.shape[-1])
    full[:, first:] = logits
    return logp, full
