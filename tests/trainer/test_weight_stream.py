"""The streamed weight sync (``trainer.weight_stream``): buckets never exceed their bound
(a single larger tensor is a bucket of its own), together they are exactly what the
whole-dict sync sends (full and LoRA), LoRA's adapter stream holds the adapter only,
and an ``hf`` engine fed bucket by bucket serves the trainer's log-probabilities."""

from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any

import pytest
import torch

from reinforge.core import Experience
from reinforge.core.eid import EID
from reinforge.models.engines.hf import HFEngine
from reinforge.models.model_wrapper import ModelWrapper
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig
from reinforge.trainer.weight_stream import (
    full_weight_buckets,
    lora_adapter_buckets,
    tensor_bytes,
)
from reinforge.trainer.weight_sync import WeightTransport, sync_in_process


def _trainer(path: Path, lora: bool = False) -> Trainer:
    data: dict[str, Any] = {"algorithm": "grpo", "lr": 1e-2 if lora else 1e-3}
    if lora:
        data["lora"] = {"enabled": True, "r": 4, "alpha": 8}
    return Trainer(path, TrainerConfig.model_validate(data), pad_token_id=0)


def _distinct_bytes(bucket: dict[str, torch.Tensor]) -> int:
    """A bucket's bytes, a tensor under two names (tied embeddings) counted once."""
    seen = {id(t): tensor_bytes(t) for t in bucket.values()}
    return sum(seen.values())


def union(buckets: Any) -> dict[str, torch.Tensor]:
    out: dict[str, torch.Tensor] = {}
    for bucket in buckets:
        assert not out.keys() & bucket.keys(), "a name came twice"
        out.update(bucket)
    return out


def assert_same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].dtype == b[name].dtype, name
        assert torch.equal(a[name], b[name]), name


@pytest.mark.parametrize("bound_kib", [16, 64, 10**6])
def test_buckets_stay_under_their_bound_and_add_up_to_the_whole_sync(
    tiny_model_path: Path, bound_kib: int
) -> None:
    trainer = _trainer(tiny_model_path)
    bound = bound_kib * 1024
    buckets = list(trainer.weight_buckets(bound))
    for bucket in buckets:  # over the bound only as one (tied) tensor alone
        assert _distinct_bytes(bucket) <= bound or len({id(t) for t in bucket.values()}) == 1
    for first, second in itertools.pairwise(buckets):  # cut only where the next won't fit
        head = next(iter(second.values()))
        assert _distinct_bytes(first) + tensor_bytes(head) > bound
    assert len(buckets) == 1 if bound_kib == 10**6 else len(buckets) > 2
    assert_same(union(buckets), trainer.weights_for_sync())


def test_tied_weights_are_gathered_once_and_sent_under_both_names(tiny_model_path: Path) -> None:
    trainer = _trainer(tiny_model_path)
    model = trainer.model
    if model.get_output_embeddings().weight is not model.get_input_embeddings().weight:
        pytest.skip("the tiny model's embeddings are not tied")
    sent = union(full_weight_buckets(model, bucket_bytes=2**30))
    assert sent["lm_head.weight"] is sent["model.embed_tokens.weight"]


def test_a_lora_stream_is_the_merged_layers_and_the_adapter_stream_the_adapter_only(
    tiny_model_path: Path, sampled: list[Experience]
) -> None:
    trainer = _trainer(tiny_model_path, lora=True)
    assert not trainer.train_step(
        copy.deepcopy(sampled)
    ).skipped  # B is zero at start: make the merge count
    merged = union(trainer.weight_buckets(16 * 1024))
    assert_same(merged, trainer.weights_for_sync())
    assert all(".lora_" not in name and "base_model" not in name for name in merged)
    adapter = union(lora_adapter_buckets(trainer.model, bucket_bytes=16 * 1024))
    expected = {k for k in trainer.model.state_dict() if ".lora_" in k}
    assert adapter.keys() == expected and expected
    state = trainer.model.state_dict()
    assert all(torch.equal(adapter[k], state[k]) for k in expected)


def test_a_rank_that_keeps_nothing_yields_nothing(tiny_model_path: Path) -> None:
    trainer = _trainer(tiny_model_path)
    assert list(full_weight_buckets(trainer.model, bucket_bytes=1024, keep=False)) == []


@pytest.fixture(scope="module")
def sampled(tiny_model_and_tokenizer: tuple[Any, Any]) -> list[Experience]:
    model, tokenizer = tiny_model_and_tokenizer
    with HFEngine(model=model, tokenizer=tokenizer, device="cpu", seed=5) as engine:
        exps = ModelWrapper(engine).generate(["The cat sat on", "Numbers: one"], n=4, max_tokens=6)
    for i, exp in enumerate(exps):
        exp.eid = EID(batch=1, task=i // 4, run=i % 4)
        exp.reward = float(i % 2)
    return exps


@pytest.mark.parametrize("engine_dtype", [torch.float32, torch.bfloat16])
def test_an_hf_engine_fed_bucket_by_bucket_serves_the_trainers_logprobs(
    tiny_model_path: Path,
    tiny_model_and_tokenizer: tuple[Any, Any],
    sampled: list[Experience],
    engine_dtype: torch.dtype,
) -> None:
    model, tokenizer = tiny_model_and_tokenizer
    trainer = _trainer(tiny_model_path)
    assert not trainer.train_step(copy.deepcopy(sampled)).skipped
    probe = [int(t) for t in sampled[0].tokens]
    engine_model = copy.deepcopy(model).to(engine_dtype)
    with HFEngine(model=engine_model, tokenizer=tokenizer, device="cpu") as engine:
        before = engine.score(probe)
        chunks: list[int] = []
        real = trainer.weight_buckets

        def counted(bucket_bytes: int) -> Any:
            for bucket in real(bucket_bytes):
                chunks.append(len(bucket))
                yield bucket

        trainer.weight_buckets = counted  # type: ignore[method-assign]
        version = sync_in_process(trainer, engine, transport=WeightTransport("buckets", 32 * 1024))
        after = engine.score(probe)
    assert version == 1 == engine.model_version and len(chunks) > 2
    with torch.no_grad():
        ids = torch.tensor([probe])
        logits = trainer.model(input_ids=ids).logits[0, :-1].float()
        want = torch.log_softmax(logits, -1).gather(-1, ids[0, 1:, None])[:, 0].tolist()
    tolerance = 1e-4 if engine_dtype == torch.float32 else 0.02  # bf16 rounding
    assert max(abs(a - b) for a, b in zip(after, want, strict=True)) < tolerance
    assert max(abs(a - b) for a, b in zip(before, want, strict=True)) > 10 * tolerance
    assert next(engine_model.parameters()).dtype == engine_dtype


def test_an_hf_engine_rejects_a_bucket_with_names_it_does_not_have(
    tiny_model_and_tokenizer: tuple[Any, Any],
) -> None:
    model, tokenizer = tiny_model_and_tokenizer
    with HFEngine(model=copy.deepcopy(model), tokenizer=tokenizer, device="cpu") as engine:
        with pytest.raises(ValueError, match="names the model does not have"):
            engine.receive_weights([{"no.such.weight": torch.zeros(1)}], version=3)
        assert engine.model_version == 0
