"""log p(target) from a block of logits, with a backward that holds one gradient-sized
tensor instead of four.

Why: ``log_softmax(logits.float()).gather(target)`` under autograd keeps the fp32
copy of the logits and the log-softmax for backward, and its backward makes two more
tensors of that size (the scattered gradient and the log-softmax's input gradient),
plus the bf16 copy under autocast: about 18 bytes per logit. On the demo that is
~0.22 GB per 256-position chunk of SmolLM2's 49,152-word vocabulary, the largest
transient of a training step. The gradient has a closed form, ``g * (onehot - softmax)``,
so forward keeps only each row's log-sum-exp and backward writes the gradient straight
into one tensor of the logits' dtype, a vocabulary slice at a time: 4 bytes per logit
under bf16 autocast (the saved logits and their gradient), 8 in fp32.

The values are the same; the gradient equals autograd's up to fp32 rounding (the
same terms, summed in another order).
"""

from __future__ import annotations

import torch

#: vocabulary columns per slice: the fp32 temporaries of a slice are small (256
#: positions x 8,192 columns = 8 MB) whatever the vocabulary's size
VOCAB_SLICE = 8192


def _logsumexp(logits: torch.Tensor) -> torch.Tensor:
    """Each row's log-sum-exp in fp32, a vocabulary slice at a time."""
    parts = [
        torch.logsumexp(logits[:, s : s + VOCAB_SLICE].float(), dim=-1)
        for s in range(0, logits.shape[-1], VOCAB_SLICE)
    ]
    return torch.logsumexp(torch.stack(parts, dim=-1), dim=-1)


def logit_grad_into(
    out: torch.Tensor,
    logits: torch.Tensor,
    targets: torch.Tensor,
    lse: torch.Tensor,
    grad: torch.Tensor,
) -> torch.Tensor:
    """Write the gradient of ``sum(grad * logp(target))`` wrt ``logits`` into ``out``
    (``out`` may be ``logits`` itself, overwritten): ``grad * (onehot - softmax)``, a
    vocabulary slice at a time in fp32, rounded once to ``out``'s dtype."""
    grad = grad.float()
    rows = torch.arange(logits.shape[0], device=logits.device)
    p_target = (logits[rows, targets].float() - lse).exp()
    for s in range(0, logits.shape[-1], VOCAB_SLICE):
        part = logits[:, s : s + VOCAB_SLICE].to(torch.float32, copy=True)
        part.sub_(lse[:, None]).exp_().mul_(-grad[:, None])
        out[:, s : s + VOCAB_SLICE] = part
    out[rows, targets] = (grad - p_target * grad).to(out.dtype)
    return out


def pick_logprob(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's log-prob of its target (fp32) and its log-sum-exp, without autograd."""
    lse = _logsumexp(logits)
    return logits.gather(-1, targets[:, None])[:, 0].float() - lse, lse


class _TargetLogprob(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        picked, lse = pick_logprob(logits, targets)
        ctx.save_for_backward(logits, targets, lse)
        return picked

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:  # type: ignore[override]
        logits, targets, lse = ctx.saved_tensors
        return logit_grad_into(torch.empty_like(logits), logits, targets, lse, grad), None


def target_logprob(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log-softmax of each row of ``logits`` (positions x vocabulary, any float dtype)
    at its ``targets`` column, in fp32."""
    return _TargetLogprob.apply(logits, targets)
