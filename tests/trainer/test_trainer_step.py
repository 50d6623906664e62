"""One trainer step per algorithm preset (full and LoRA) on experiences sampled from the tiny model.

Checks that a step trains (weights move, finite metrics), that rollout log-probs
serve as the old log-probs (on-policy ratio 1), that in-process weight sync makes
the engine score exactly like the trainer's model, staleness filtering, skipped
batches, when a reference model is loaded, and (the learning test) that GRPO
raises the reward of a simple token-parity task.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from reinforge.algorithms import TrainBatch, collate, resolve_algorithm
from reinforge.core import Experience
from reinforge.core.eid import EID
from reinforge.models.engines.hf import HFEngine
from reinforge.models.model_wrapper import ModelWrapper
from reinforge.trainer.token_logprobs import token_logprobs
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig
from reinforge.trainer.weight_sync import sync_in_process

PRESETS = ["grpo", "dapo", "gspo", "rloo", "reinforce_plus_plus", "cispo", "opmd", "sft"]
PROMPTS = ["The cat sat on", "Numbers: one two"]


def _config(algorithm: str, lora: bool, **extra: Any) -> TrainerConfig:
    data: dict[str, Any] = {
        "algorithm": algorithm,
        "lr": 1e-2 if lora else 1e-3,
        "micro_batch_size": 4,
        "lora": {"enabled": lora, "r": 4, "alpha": 8},
    }
    data.update(extra)
    return TrainerConfig.model_validate(data)


@pytest.fixture(scope="module")
def sampled(tiny_model_and_tokenizer: tuple[Any, Any]) -> list[Experience]:
    """2 tasks x 4 samples of up to 6 tokens, with rollout log-probs and a spread of rewards."""
    model, tokenizer = tiny_model_and_tokenizer
    with HFEngine(model=model, tokenizer=tokenizer, device="cpu", seed=3) as engine:
        wrapper = ModelWrapper(engine)
        exps = wrapper.generate(PROMPTS, n=4, max_tokens=6)
    for i, exp in enumerate(exps):
        task, run = divmod(i, 4)
        exp.eid = EID(batch=1, task=task, run=run)
        exp.reward = float(run % 2)  # every group has a reward spread
    assert all(e.response_length > 0 and e.logprobs is not None for e in exps)
    return exps


@pytest.fixture
def sync_engine(tiny_model_and_tokenizer: tuple[Any, Any]) -> Iterator[HFEngine]:
    """An engine with its own copy of the base weights (weight updates may change it)."""
    model, tokenizer = tiny_model_and_tokenizer
    with HFEngine(model=copy.deepcopy(model), tokenizer=tokenizer, device="cpu") as engine:
        yield engine


def _trainable(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}


def _response_logprobs(model: Any, exps: list[Experience], pad: int) -> list[torch.Tensor]:
    """The model's log-probs of each experience's response tokens (one forward pass)."""
    batch = collate(exps, pad)
    with torch.no_grad():
        logp, _ = token_logprobs(model, batch)
    out = []
    for row, exp in enumerate(exps):
        start = exp.prompt_length - 1
        out.append(logp[row, start : start + exp.response_length])
    return out


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
@pytest.mark.parametrize("algorithm", PRESETS)
def test_step_trains_and_weight_sync_is_exact(
    algorithm: str,
    lora: bool,
    sampled: list[Experience],
    sync_engine: HFEngine,
    tiny_model_path: Path,
) -> None:
    pad = sync_engine.tokenizer.hf.pad_token_id
    trainer = Trainer(tiny_model_path, _config(algorithm, lora), pad_token_id=pad)
    exps = copy.deepcopy(sampled)

    # on-policy: the trainer's log-probs of the rollout tokens are the rollout log-probs
    before = _response_logprobs(trainer.model, exps, pad)
    for exp, logp in zip(exps, before, strict=True):
        torch.testing.assert_close(logp, exp.logprobs, atol=1e-4, rtol=0)

    weights = _trainable(trainer)
    metrics = trainer.train_step(exps).metrics
    assert trainer.global_step == 1 and trainer.model_version == 1
    assert "train/skipped" not in metrics
    assert metrics["train/experiences"] == len(exps)
    assert math.isfinite(metrics["train/loss"]) and math.isfinite(metrics["train/grad_norm"])
    assert metrics["train/grad_norm"] > 0
    if "train/sampler/ratio_mean" in metrics:
        assert metrics["train/sampler/ratio_mean"] == pytest.approx(1.0, abs=1e-3)
    changed = [n for n, w in _trainable(trainer).items() if not torch.equal(w, weights[n])]
    assert changed, "no trainable weight changed"
    if lora:
        assert all("lora_" in n for n in weights)

    # the step moved the policy: the (not yet synced) engine scores differently
    trainer.model.eval()
    after = _response_logprobs(trainer.model, exps, pad)
    drift = max(
        float(
            (torch.tensor(sync_engine.score(e.tokens.tolist()))[e.prompt_length - 1 :] - a)
            .abs()
            .max()
        )
        for e, a in zip(exps, after, strict=True)
    )
    assert drift > 1e-3

    assert sync_in_process(trainer, sync_engine) == 1
    assert sync_engine.model_version == 1
    for exp, logp in zip(exps, after, strict=True):
        scored = torch.tensor(sync_engine.score(exp.tokens.tolist()))[exp.prompt_length - 1 :]
        torch.testing.assert_close(scored, logp, atol=1e-4, rtol=0)


@pytest.mark.parametrize("algorithm", ["grpo", "reinforce_plus_plus", "dapo"])
def test_reference_model_only_with_kl(algorithm: str, tiny_model_path: Path) -> None:
    spec = resolve_algorithm(algorithm)
    full = Trainer(tiny_model_path, _config(algorithm, False), pad_token_id=2)
    assert (full.ref_model is not None) == spec.use_reference
    lora = Trainer(tiny_model_path, _config(algorithm, True), pad_token_id=2)
    assert lora.ref_model is None


def test_lora_reference_is_the_base_model(
    sampled: list[Experience], tiny_model_and_tokenizer: tuple[Any, Any], tiny_model_path: Path
) -> None:
    base, _ = tiny_model_and_tokenizer
    trainer = Trainer(tiny_model_path, _config("grpo", True), pad_token_id=2)
    exps = copy.deepcopy(sampled)
    metrics = trainer.train_step(exps).metrics
    assert "train/kl_loss/value" in metrics
    batch = collate(exps, 2)
    with torch.no_grad():
        expected, _ = token_logprobs(base, batch)
        policy, _ = token_logprobs(trainer.model, batch)
    ref = trainer._ref_logprobs(batch)
    mask = batch.loss_mask
    torch.testing.assert_close(ref[mask], expected[mask], atol=1e-5, rtol=0)
    assert float((policy[mask] - expected[mask]).abs().max()) > 1e-3  # adapters are active again


def test_stale_experiences_are_dropped(sampled: list[Experience], tiny_model_path: Path) -> None:
    trainer = Trainer(tiny_model_path, _config("dapo", False, max_staleness=1), pad_token_id=2)
    trainer.model_version = 3
    exps = copy.deepcopy(sampled)
    for i, exp in enumerate(exps):
        exp.info["model_version"] = 0 if i < 4 else 2  # task 0 is 3 versions old, task 1 is 1
    metrics = trainer.train_step(exps).metrics
    assert metrics["train/stale_dropped"] == 4
    assert metrics["train/experiences"] == 4
    assert trainer.model_version == 4
    # each step reports how far behind its experiences were sampled (before the filter)
    assert metrics["train/staleness_min"] == 1.0
    assert metrics["train/staleness_max"] == 3.0
    assert metrics["train/staleness_mean"] == pytest.approx(2.0)


def test_batch_without_usable_experiences_is_skipped(
    sampled: list[Experience], tiny_model_path: Path
) -> None:
    trainer = Trainer(tiny_model_path, _config("dapo", False, max_staleness=0), pad_token_id=2)
    weights = _trainable(trainer)
    masked = copy.deepcopy(sampled[:2])
    for exp in masked:
        exp.action_mask = torch.zeros_like(exp.action_mask)
    empty = Experience(tokens=[1, 2, 3], prompt_length=3, reward=1.0)
    result = trainer.train_step([*masked, empty])
    assert result.skipped and result.metrics["train/skipped"] == 1.0

    stale = copy.deepcopy(sampled)
    for exp in stale:
        exp.info["model_version"] = -1  # older than the trainer's version 0
    result = trainer.train_step(stale)
    metrics = result.metrics
    assert (
        result.skipped
        and metrics["train/skipped"] == 1.0
        and metrics["train/stale_dropped"] == len(stale)
    )
    assert trainer.global_step == 0 and trainer.model_version == 0
    assert all(torch.equal(w, weights[n]) for n, w in _trainable(trainer).items())


def test_unclipped_step_reports_grad_norm_and_skips_nonfinite_gradients(
    sampled: list[Experience], tiny_model_path: Path
) -> None:
    trainer = Trainer(tiny_model_path, _config("dapo", False, max_grad_norm=None), pad_token_id=2)
    assert trainer.train_step(copy.deepcopy(sampled)).metrics["train/grad_norm"] > 0

    poisoned = copy.deepcopy(sampled)
    for exp in poisoned:
        exp.advantages = torch.full((exp.response_length,), float("nan"))
    weights = _trainable(trainer)
    result = trainer.train_step(poisoned)
    assert not result.skipped  # the step happened: the schedule and version moved on
    metrics = result.metrics
    assert metrics["train/nonfinite_grad"] == 1.0 and math.isnan(metrics["train/grad_norm"])
    assert all(torch.equal(w, weights[n]) for n, w in _trainable(trainer).items())


# ---- learning ------------------------------------------------------------------------


def _parity_reward(exp: Experience) -> float:
    """1 if the first sampled response token has an even id."""
    return float(int(exp.tokens[exp.prompt_length]) % 2 == 0)


def test_grpo_learns_token_parity(tiny_model_path: Path) -> None:
    """8 tasks x 8 samples per step; reward 1 when the first response token id is even.

    Sampling is restricted to the 16 likeliest tokens (top_k): the random model's
    next-token distribution is nearly uniform over 49k tokens, so the task is about
    moving mass between candidates the policy actually samples. The rollout
    log-probs stay the raw model's, so training is on-policy (ratio 1). Measured over
    seeds: the first 3 steps average 0.6-0.67, the last 3 0.94-0.95.
    """
    prompts = [f"Question {i}: pick a token." for i in range(8)]
    trainer = Trainer(
        tiny_model_path, _config("grpo", False, lr=3e-3, micro_batch_size=64), pad_token_id=2
    )
    rewards: list[float] = []
    with HFEngine(tiny_model_path, device="cpu", seed=2) as engine:
        wrapper = ModelWrapper(engine)
        for step in range(1, 11):
            exps = wrapper.generate(prompts, n=8, max_tokens=1, top_k=16)
            for i, exp in enumerate(exps):
                exp.eid = EID(batch=step, task=i // 8, run=i % 8)
                exp.reward = _parity_reward(exp)
            rewards.append(sum(e.reward for e in exps) / len(exps))
            metrics = trainer.train_step(exps).metrics
            assert metrics["train/sampler/ratio_mean"] == pytest.approx(1.0, abs=1e-3)
            sync_in_process(trainer, engine)
    first, last = sum(rewards[:3]) / 3, sum(rewards[-3:]) / 3
    assert 0.3 < rewards[0] < 0.7, rewards  # the untrained policy is at chance
    assert last > first + 0.15, rewards
    assert last > 0.8, rewards


def test_bf16_mixed_precision_trains_close_to_fp32(
    sampled: list[Experience], tiny_model_path: Path
) -> None:
    """Autocast changes the forward's precision only: the step still starts on-policy
    (ratio ~1 within bf16 rounding), and fp32 master weights receive the update."""
    pad = 2
    fp32 = Trainer(tiny_model_path, _config("grpo", False), pad_token_id=pad)
    bf16 = Trainer(
        tiny_model_path, _config("grpo", False, mixed_precision="bf16"), pad_token_id=pad
    )
    start = [p.detach().clone() for p in bf16.model.parameters()]
    m32 = fp32.train_step(copy.deepcopy(sampled)).metrics
    m16 = bf16.train_step(copy.deepcopy(sampled)).metrics
    assert all(p.dtype == torch.float32 for p in bf16.model.parameters())
    step = [float((a - b).abs().max()) for a, b in zip(bf16.model.parameters(), start, strict=True)]
    assert max(step) > 1e-4  # the fp32 master weights took the update (lr 1e-3)
    assert m16["train/sampler/ratio_mean"] == pytest.approx(1.0, abs=0.05)
    assert m16["train/loss"] == pytest.approx(m32["train/loss"], abs=0.05)
    moved = [
        float((a - b).detach().abs().max())
        for a, b in zip(fp32.model.parameters(), bf16.model.parameters(), strict=True)
    ]
    assert max(moved) < 5e-3  # both took nearly the same step


def test_micro_batches_are_sorted_by_length_and_give_the_whole_batch_gradient(
    sampled: list[Experience],
    tiny_model_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    step_gradient,
) -> None:
    """Experiences are ordered by length before micro-batching (less padding), and the
    update does not depend on the order they arrive in: the summed gradient of the
    sorted micro-batches is the one of the whole batch in a single pass."""
    from reinforge.trainer import step_planner

    # the sampled responses all have 6 tokens: cut them to 1..6 tokens (prefixes keep
    # the rollout log-probs on-policy), then let them arrive with lengths mixed:
    # shortest, longest, 2nd shortest, 2nd longest, ...
    kept = [1, 6, 2, 5, 3, 4, 1, 6]
    varied = [
        dataclasses.replace(
            e,
            tokens=e.tokens[: e.prompt_length + r].clone(),
            logprobs=e.logprobs[:r].clone(),
            action_mask=e.action_mask[:r].clone(),
        )
        for e, r in zip(sampled, kept, strict=True)
    ]
    by_length = sorted(varied, key=lambda e: len(e.tokens))
    mixed = [e for pair in zip(by_length[:4], reversed(by_length[4:]), strict=True) for e in pair]

    def padding(chunks: list[list[int]]) -> int:
        return sum(max(c) * len(c) - sum(c) for c in chunks)

    lengths = [len(e.tokens) for e in mixed]
    sorted_chunks = [sorted(lengths)[i : i + 4] for i in (0, 4)]
    arrival_chunks = [lengths[i : i + 4] for i in (0, 4)]
    # the lengths vary enough that micro-batching in arrival order pads more
    assert padding(arrival_chunks) > padding(sorted_chunks)

    def summed_gradient(trainer: Trainer, exps: list[Experience]) -> dict[str, torch.Tensor]:
        grads, _ = step_gradient(trainer, exps)
        assert grads
        return grads

    whole = Trainer(tiny_model_path, _config("grpo", False, micro_batch_size=8), pad_token_id=2)
    expected = summed_gradient(whole, copy.deepcopy(mixed))

    formed: list[tuple[list[int], int]] = []  # (row lengths, padded width) per micro-batch

    def recording_collate(exps: list[Experience], pad: int) -> TrainBatch:
        batch = collate(exps, pad)
        formed.append(([len(e.tokens) for e in exps], batch.input_ids.shape[1]))
        return batch

    monkeypatch.setattr(step_planner, "collate", recording_collate)
    # (share_prompts orders a group's rows together instead: tests/trainer/test_shared_prompts.py)
    split = Trainer(
        tiny_model_path,
        _config("grpo", False, micro_batch_size=4, share_prompts=False),
        pad_token_id=2,
    )
    got = summed_gradient(split, copy.deepcopy(mixed))

    assert len(formed) == 2
    assert [sorted(rows) for rows, _ in formed] == sorted_chunks
    assert [width for _, width in formed] == [max(c) for c in sorted_chunks]
    assert padding([rows for rows, _ in formed]) == padding(sorted_chunks)

    assert got.keys() == expected.keys()
    assert max(float(g.abs().max()) for g in expected.values()) > 0
    for name, grad in expected.items():
        scale = max(float(grad.abs().max()), 1e-12)
        torch.testing.assert_close(got[name], grad, atol=1e-4 * scale, rtol=0, msg=name)


def test_packed_logprobs_match_the_full_projection(
    sampled: list[Experience], tiny_model_and_tokenizer: tuple[Any, Any]
) -> None:
    """Projecting only the response columns gives the same log-probs there, 0 elsewhere."""
    model, _ = tiny_model_and_tokenizer
    batch = collate(sampled, 2)
    with torch.no_grad():
        full, _ = token_logprobs(model, batch)
        packed, _ = token_logprobs(model, batch, only=batch.response_mask)
    mask = batch.response_mask
    torch.testing.assert_close(packed[mask], full[mask], atol=1e-5, rtol=0)
    assert bool((packed[~mask] == 0).all())


def test_chunked_vocabulary_projection_gives_the_same_values_and_gradients(
    sampled: list[Experience],
    tiny_model_and_tokenizer: tuple[Any, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Projecting 3 positions at a time (checkpointed) gives the one-shot log-probs and
    the same gradient: chunking changes peak memory, not the step."""
    from reinforge.trainer import token_logprobs as token_logprobs_module

    batch = collate(sampled, 2)
    mask = batch.response_mask
    assert int(mask.sum()) > 3  # so there is more than one chunk

    def logprobs_and_grad(chunk: int) -> tuple[torch.Tensor, torch.Tensor]:
        monkeypatch.setattr(token_logprobs_module, "VOCAB_CHUNK", chunk)
        model = copy.deepcopy(tiny_model_and_tokenizer[0])
        logp, _ = token_logprobs(model, batch, only=mask)
        logp[mask].sum().backward()
        return logp.detach(), model.get_output_embeddings().weight.grad.clone()

    whole, whole_grad = logprobs_and_grad(10_000)
    chunked, chunked_grad = logprobs_and_grad(3)
    torch.testing.assert_close(chunked, whole, atol=1e-6, rtol=0)
    scale = float(whole_grad.abs().max())
    assert scale > 0
    # the weight gradient sums over positions chunk by chunk: summation order only
    torch.testing.assert_close(chunked_grad, whole_grad, atol=1e-4 * scale, rtol=0)


def test_two_update_epochs_are_two_steps_on_the_same_batch(
    sampled: list[Experience], tiny_model_path: Path
) -> None:
    """``update_epochs: 2`` (with the grpo preset's KL term, so reference log-probs are
    reused too) ends with the weights of two one-epoch steps on the same experiences:
    the collated micro-batches serve every epoch unchanged."""
    config = _config("grpo", False, update_epochs=2, warmup_steps=0)
    two_epochs = Trainer(tiny_model_path, config, pad_token_id=2)
    assert two_epochs.ref_model is not None
    passes: list[tuple[int, int]] = []
    two_epochs.train_step(copy.deepcopy(sampled), on_micro_batch=lambda k, n: passes.append((k, n)))
    assert passes == [(k, 4) for k in range(1, 5)]  # 8 experiences / micro-batch 4, twice

    one_epoch = Trainer(tiny_model_path, _config("grpo", False, warmup_steps=0), pad_token_id=2)
    exps = copy.deepcopy(sampled)
    one_epoch.train_step(exps)
    one_epoch.train_step(exps)
    for a, b in zip(two_epochs.model.parameters(), one_epoch.model.parameters(), strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0)
