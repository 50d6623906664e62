"""``target_logprob``: the log-prob of each row's target with a closed-form backward.
It must give autograd's values and gradients, and hold fewer logit-sized tensors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from reinforge.trainer import target_logprob as target_logprob_module
from reinforge.trainer.target_logprob import target_logprob

ROWS, VOCAB, HIDDEN = 24, 3 * 1024 + 17, 16


def autograd_logprob(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """What the trainer computed before: log-softmax in fp32, then the target's entry."""
    return torch.log_softmax(logits.float(), dim=-1).gather(-1, targets[:, None])[:, 0]


def values_and_grads(
    pick: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    hidden = torch.randn(ROWS, HIDDEN, generator=gen).to(dtype).requires_grad_()
    head = (torch.randn(VOCAB, HIDDEN, generator=gen) * 0.3).to(dtype).requires_grad_()
    targets = torch.randint(0, VOCAB, (ROWS,), generator=gen)
    weights = torch.randn(ROWS, generator=gen)  # a loss that weighs rows differently
    logp = pick(hidden @ head.T, targets)
    (logp * weights).sum().backward()
    return logp.detach(), hidden.grad, head.grad


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_values_and_gradients_are_autograds(
    dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same log-probs and the same gradients of the hidden rows and the head as
    ``log_softmax(...).gather(...)``, with a vocabulary of several uneven slices."""
    monkeypatch.setattr(target_logprob_module, "VOCAB_SLICE", 1024)
    want = values_and_grads(autograd_logprob, dtype)
    got = values_and_grads(target_logprob, dtype)
    assert got[0].dtype == torch.float32
    torch.testing.assert_close(got[0], want[0], atol=1e-5, rtol=0)
    for a, b in zip(got[1:], want[1:], strict=True):
        assert a.dtype == dtype
        scale = float(b.abs().max())
        # fp32: rounding only; bf16: both round the same fp32 gradient to bf16
        tol = 1e-5 if dtype == torch.float32 else 1e-2
        torch.testing.assert_close(a.float(), b.float(), atol=tol * scale, rtol=0)


def test_the_targets_own_term_is_in_the_gradient() -> None:
    """The gradient wrt the target's logit is g * (1 - p), the others' -g * p: a row's
    gradient sums to zero over the vocabulary, and the target's entry is positive."""
    logits = torch.randn(5, 40, requires_grad=True)
    targets = torch.tensor([0, 3, 39, 7, 7])
    target_logprob(logits, targets).sum().backward()
    torch.testing.assert_close(logits.grad.sum(-1), torch.zeros(5), atol=1e-6, rtol=0)
    assert bool((logits.grad[torch.arange(5), targets] > 0).all())


def peak_bytes_per_logit(
    pick: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    dtype: torch.dtype,
    live_tensor_bytes: Callable[[], Any],
) -> float:
    rows, vocab = 64, 49152  # SmolLM2's vocabulary
    hidden = torch.randn(rows, 8).to(dtype).requires_grad_()
    head = torch.randn(vocab, 8).to(dtype).requires_grad_()
    targets = torch.randint(0, vocab, (rows,))
    tracker = live_tensor_bytes()
    with tracker:
        pick(hidden @ head.T, targets).sum().backward()
    return tracker.peak / (rows * vocab)


@pytest.mark.parametrize(
    "dtype, at_most", [(torch.float32, 10.5), (torch.bfloat16, 6.5)], ids=["fp32", "bf16"]
)
def test_forward_and_backward_hold_fewer_logit_sized_tensors(
    dtype: torch.dtype, at_most: float, live_tensor_bytes: Callable[[], Any]
) -> None:
    """The peak of a projection, the log-prob and its backward, in bytes per logit. The
    logits and their gradient are unavoidable (fp32 4 + 4, bf16 2 + 2, plus a vocabulary
    slice's fp32 temporaries); autograd's fp32 copy, log-softmax and their gradients
    (12.25-12.5 bytes here) must be gone."""
    assert peak_bytes_per_logit(autograd_logprob, dtype, live_tensor_bytes) >= 12  # seen
    assert peak_bytes_per_logit(target_logprob, dtype, live_tensor_bytes) <= at_most
