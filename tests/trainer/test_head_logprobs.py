"""The fused vocabulary head of a one-process trainer (``head_logprobs.py``): the same
log-probs and gradients as the chunked, checkpointed path, added into ``.grad``, with
no per-chunk weight gradient in flight."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

from reinforge.algorithms import collate
from reinforge.core import Experience
from reinforge.trainer import token_logprobs as token_logprobs_module
from reinforge.trainer.head_logprobs import fusable_head
from reinforge.trainer.sharding.strategy import RankContext, Single
from reinforge.trainer.token_logprobs import token_logprobs


def batch_of(vocab: int, rows: int = 6, prompt: int = 5, seed: int = 0) -> Any:
    gen = torch.Generator().manual_seed(seed)
    exps = [
        Experience(
            tokens=torch.randint(3, vocab, (prompt + 4 + row,), generator=gen),
            prompt_length=prompt,
            reward=float(row % 2),
        )
        for row in range(rows)
    ]
    return collate(exps, 2)


def grads_after(
    model: nn.Module, batch: Any, fused: bool, autocast: bool
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Log-probs of the response columns and every parameter's ``.grad`` after a
    backward of a weighted sum of them, on top of gradients already there (as in a
    step's later micro-batches)."""
    model = copy.deepcopy(model)
    for p in model.parameters():
        p.grad = torch.full_like(p, 0.01)
    mask = batch.response_mask
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        logp, _ = token_logprobs(model, batch, only=mask, fused_head=fused)
    weights = torch.linspace(-1.0, 2.0, int(mask.sum()))
    (logp[mask] * weights).sum().backward()
    return logp.detach(), {n: p.grad for n, p in model.named_parameters()}


@pytest.mark.parametrize("autocast", [False, True], ids=["fp32", "bf16-autocast"])
def test_fused_head_gives_the_chunked_paths_values_and_gradients(
    autocast: bool,
    tiny_model_and_tokenizer: tuple[Any, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every parameter's gradient, the tied head-and-embedding weight's included, is the
    chunked path's (3 positions a chunk, so several chunks add into the head)."""
    model = tiny_model_and_tokenizer[0]
    head = model.get_output_embeddings()
    assert head.weight is model.get_input_embeddings().weight  # tied, as SmolLM2's
    assert fusable_head(head)
    monkeypatch.setattr(token_logprobs_module, "VOCAB_CHUNK", 3)
    batch = batch_of(head.weight.shape[0])
    want_logp, want = grads_after(model, batch, fused=False, autocast=autocast)
    got_logp, got = grads_after(model, batch, fused=True, autocast=autocast)
    torch.testing.assert_close(got_logp, want_logp, atol=1e-5, rtol=0)
    # fp32: rounding only; bf16: a bf16 product can round the other way
    tol = 1e-2 if autocast else 1e-5
    for name, grad in want.items():
        scale = float((grad - 0.01).abs().max())
        assert scale > 0, name
        torch.testing.assert_close(got[name], grad, atol=tol * scale, rtol=0, msg=name)


def test_a_micro_batch_without_gradients_leaves_grad_alone(
    tiny_model_and_tokenizer: tuple[Any, Any],
) -> None:
    """Under ``no_grad`` (pi_old, the reference) the fused head makes no ``.grad``."""
    model = copy.deepcopy(tiny_model_and_tokenizer[0])
    batch = batch_of(model.get_output_embeddings().weight.shape[0])
    with torch.no_grad():
        fused, _ = token_logprobs(model, batch, only=batch.response_mask, fused_head=True)
        chunked, _ = token_logprobs(model, batch, only=batch.response_mask)
    torch.testing.assert_close(fused, chunked, atol=1e-5, rtol=0)
    assert all(p.grad is None for p in model.parameters())


def test_only_a_plain_linear_head_in_one_process_is_fused() -> None:
    """A head with a bias, a hook or another type (a LoRA wrapper), or a weight that is
    not a plain parameter, keeps the chunked path; so does every strategy but Single."""
    assert fusable_head(nn.Linear(4, 8, bias=False))
    assert not fusable_head(nn.Linear(4, 8))
    hooked = nn.Linear(4, 8, bias=False)
    hooked.register_forward_pre_hook(lambda *_: None)
    assert not fusable_head(hooked)

    class Wrapped(nn.Linear):
        pass

    assert not fusable_head(Wrapped(4, 8, bias=False))
    single = Single(RankContext(), torch.device("cpu"))
    assert single.wrap(nn.Linear(2, 2)).fused_head
    assert not single.wrap_frozen(nn.Linear(2, 2)).fused_head


def _tied_peak(
    fused: bool, live_tensor_bytes: Callable[[], Any], monkeypatch: pytest.MonkeyPatch
) -> float:
    """Peak live bytes of a tied embedding + head's forward and backward (bf16
    autocast, 4 chunks of positions), in units of the fp32 weight's size. A chunk's
    logits are small beside the weight, as SmolLM2's (256 x 49,152 bf16 logits are a
    quarter of the 49,152 x 576 fp32 weight)."""
    from reinforge.trainer import target_logprob

    vocab, hidden, positions = 8192, 256, 128
    monkeypatch.setattr(token_logprobs_module, "VOCAB_CHUNK", positions // 4)
    monkeypatch.setattr(target_logprob, "VOCAB_SLICE", 1024)
    gen = torch.Generator().manual_seed(0)
    embed = nn.Embedding(vocab, hidden)
    head = nn.Linear(hidden, vocab, bias=False)
    head.weight = embed.weight
    ids = torch.randint(0, vocab, (positions,), generator=gen)
    targets = torch.randint(0, vocab, (positions,), generator=gen)
    embed.weight.grad = torch.zeros_like(embed.weight)  # a later micro-batch
    tracker = live_tensor_bytes()
    with tracker:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            rows = embed(ids) * 2.0
            logp = token_logprobs_module._vocab_logprobs(head, rows, targets, fused)
        logp.sum().backward()
    return tracker.peak / (vocab * hidden * 4)


def test_fused_head_holds_no_weight_gradient_of_its_own(
    live_tensor_bytes: Callable[[], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``.grad`` already there, the chunked path makes one fp32 gradient of the
    weight per chunk and sums them (and the embedding's) in new buffers: several
    weight-sized tensors at once. The fused head keeps the bf16 weight copy (half
    the fp32 size) and one chunk's logits; the embedding's gradient adds into
    ``.grad`` in place. Peaks in fp32 weight sizes."""
    chunked = _tied_peak(False, live_tensor_bytes, monkeypatch)
    fused = _tied_peak(True, live_tensor_bytes, monkeypatch)
    assert chunked >= 2.5
    assert fused <= 1.5


def test_a_training_step_with_the_fused_head_ends_at_the_chunked_steps_weights(
    tiny_model_path: Any, two_groups_of_four: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole GRPO step (two micro-batches, gradient clipping, AdamW) of a trainer in
    one process ends at the weights of the same step with the head left to autograd."""
    from reinforge.trainer.trainer import Trainer
    from reinforge.trainer.trainer_config import TrainerConfig

    exps = two_groups_of_four(seed=1)
    cfg = TrainerConfig.model_validate(
        {"algorithm": "grpo", "lr": 1e-3, "micro_batch_size": 4, "warmup_steps": 0}
    )

    def weights_after_a_step(fused: bool) -> dict[str, torch.Tensor]:
        monkeypatch.setattr(token_logprobs_module, "VOCAB_CHUNK", 5)
        trainer = Trainer(tiny_model_path, cfg, pad_token_id=2)
        trainer.forward_module.fused_head = fused
        trainer.train_step(copy.deepcopy(exps))
        return {n: p.detach().clone() for n, p in trainer.model.named_parameters()}

    start = {
        n: p.detach().clone()
        for n, p in Trainer(tiny_model_path, cfg, pad_token_id=2).model.named_parameters()
    }
    fused, chunked = weights_after_a_step(True), weights_after_a_step(False)
    head = next(n for n in fused if "embed_tokens" in n)  # the tied head's weight
    assert not torch.equal(fused[head], start[head])  # the step moved it
    for name, value in chunked.items():
        torch.testing.assert_close(fused[name], value, atol=1e-6, rtol=0, msg=name)
