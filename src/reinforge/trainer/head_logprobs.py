"""The vocabulary head and the targets' log-probs as one autograd function, for a
policy trained in one process: its weight gradient goes straight into ``.grad``.

Why: projecting the response positions chunk by chunk, each chunk a checkpointed
``head(hidden)`` (``token_logprobs._vocab_logprobs``), autograd gives the head weight
one full gradient per chunk, in fp32 under bf16 autocast (the cast's backward), and
sums them, and a tied input embedding's gradient, in buffers of its own. For SmolLM2's
49,152 x 576 head that is three 108 MiB tensors alive at once at the end of a demo
micro-batch, the largest transient of a training step (355 MiB in all, measured with
a tensor tracker). Here the backward recomputes each chunk's logits, turns them into
their gradient in place (``target_logprob.logit_grad_into``) and adds the head's
gradient into the weight's ``.grad`` a vocabulary slice at a time; autograd's own
accumulation of the embedding's gradient then adds into the same ``.grad`` in place.
What remains in flight: the weight in the compute dtype and one chunk's logits.

Only where nothing watches the weight's gradient arrive through autograd: one process
(DDP's reducer and FSDP2's reduce-scatter hook that), a plain ``nn.Linear`` head with
no bias and no hooks (not a LoRA-wrapped or sharded one). Elsewhere the chunked,
checkpointed path is used. The arithmetic is the same: bf16 (under autocast) or fp32
matmuls, the gradient's per-chunk terms added in fp32.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
from torch import nn

from reinforge.trainer.target_logprob import VOCAB_SLICE, logit_grad_into, pick_logprob


def fusable_head(head: Any) -> bool:
    """Whether ``head`` is a plain bias-free linear layer whose weight is an ordinary
    leaf tensor (no hooks, no LoRA wrapper, no shards)."""
    if type(head) is not nn.Linear or head.bias is not None:
        return False
    if head._forward_hooks or head._forward_pre_hooks or head._backward_hooks:
        return False
    weight = head.weight
    return type(weight) is nn.Parameter and weight.is_leaf


def _compute_dtype(weight: torch.Tensor) -> torch.dtype:
    device = weight.device.type
    if torch.amp.is_autocast_available(device) and torch.is_autocast_enabled(device):
        return torch.get_autocast_dtype(device)
    return weight.dtype


def _without_autocast(device: str) -> contextlib.AbstractContextManager:
    """Autocast off for ``device``: the casts here are explicit (a device with no
    autocast, such as ``meta``, has nothing to turn off)."""
    if torch.amp.is_autocast_available(device):
        return torch.autocast(device, enabled=False)
    return contextlib.nullcontext()


class _HeadLogprobs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, targets, head, chunk):  # type: ignore[override]
        weight = head.weight
        dtype = _compute_dtype(weight)
        with _without_autocast(weight.device.type):  # forward runs without grad already
            w = weight.to(dtype)
            picked, lses = [], []
            for start in range(0, hidden.shape[0], chunk):
                logits = hidden[start : start + chunk].to(dtype) @ w.T
                p, lse = pick_logprob(logits, targets[start : start + chunk])
                picked.append(p)
                lses.append(lse)
        ctx.save_for_backward(hidden, targets, torch.cat(lses))
        ctx.head, ctx.chunk, ctx.dtype = head, chunk, dtype
        return torch.cat(picked)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):  # type: ignore[override]
        hidden, targets, lse = ctx.saved_tensors
        weight = ctx.head.weight
        with _without_autocast(weight.device.type):
            grad_hidden = _backward(
                hidden, targets, lse, grad, weight, ctx.chunk, ctx.dtype, ctx.needs_input_grad[0]
            )
        return grad_hidden, None, None, None


def _backward(
    hidden: torch.Tensor,
    targets: torch.Tensor,
    lse: torch.Tensor,
    grad: torch.Tensor,
    weight: nn.Parameter,
    chunk: int,
    dtype: torch.dtype,
    hidden_grad: bool,
) -> torch.Tensor | None:
    """``hidden``'s gradient (if ``hidden_grad``); the weight's is added into its
    ``.grad``, which is created when it is missing (the step's first backward)."""
    w = weight.to(dtype)
    grad_hidden = torch.empty_like(hidden) if hidden_grad else None
    if weight.requires_grad and weight.grad is None:
        weight.grad = torch.zeros_like(weight)
    for start in range(0, hidden.shape[0], chunk):
        part = slice(start, start + chunk)
        h = hidden[part].to(dtype)
        logits = h @ w.T
        g = logit_grad_into(logits, logits, targets[part], lse[part], grad[part])
        if grad_hidden is not None:
            grad_hidden[part] = g @ w
        if weight.requires_grad:
            for s in range(0, g.shape[-1], VOCAB_SLICE):
                weight.grad[s : s + VOCAB_SLICE] += g[:, s : s + VOCAB_SLICE].T @ h
    return grad_hidden


def head_logprobs(
    head: nn.Linear, hidden: torch.Tensor, targets: torch.Tensor, chunk: int
) -> torch.Tensor:
    """log p(target) (fp32) at each row of ``hidden`` under the ``head`` projection,
    ``chunk`` rows at a time; the head weight's gradient goes into its ``.grad``."""
    if not hidden.shape[0]:
        return hidden.new_zeros(0, dtype=torch.float32)
    return _HeadLogprobs.apply(hidden, targets, head, chunk)
