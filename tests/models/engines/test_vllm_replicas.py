"""Two real vLLM replicas that hot-load LoRA adapters, and what runs through them.

What a user relies on beyond one server: requests are spread over the replicas;
the launcher's weight sync (``trainer/weight_sync.py``) puts a LoRA trainer's
adapter on every replica, so each serves the trainer's weights, not the base; a
full-weight sync reaches every replica; a judge asking the 135M model through
vLLM's guided JSON decoding (``structured_output: json_schema``) gets verdicts it
accepts. The tests share one start of the two replicas (about a minute each on
a CPU). They run in file order: the full-weight sync comes last, since the LoRA
test compares the adapter with the trainer's model over the base weights.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import torch

from reinforge.buffer.pipeline import ExperiencePipeline
from reinforge.core import EID
from reinforge.models import ModelWrapper
from reinforge.models.auxiliary import AuxiliaryModel, AuxiliaryModelConfig, AuxiliaryModels
from reinforge.models.engine import SamplingParams
from reinforge.models.engines.openai.protocol import parse_prompt_logprobs, score_body
from reinforge.models.engines.vllm import VLLMEngine
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig
from reinforge.trainer.weight_sync import sync_in_process

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

CHATS = [
    [{"role": "user", "content": "What is 7 * 8? Answer with just the number."}],
    [{"role": "user", "content": "Name a colour."}],
]
TEXT = "Question: what is 7 * 8? Answer: 56. The capital of France is Paris."


@pytest.fixture(scope="module")
def replicas(vllm_python: str, real_model_path: Path) -> Iterator[VLLMEngine]:
    eng = VLLMEngine(
        real_model_path,
        python=vllm_python,
        replicas=2,
        kv_cache_gb=1,
        max_model_len=1024,
        max_lora_rank=8,
    )
    yield eng
    eng.close()


def policy(path: Path) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()


def model_logprobs(model: torch.nn.Module, ids: list[int]) -> list[float]:
    """log p(ids[i] | ids[:i]) for i >= 1, from ``model`` in this process."""
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), -1)
    return [logp[i - 1, ids[i]].item() for i in range(1, len(ids))]


def replica_logprobs(engine: VLLMEngine, model: str, ids: list[int]) -> list[list[float]]:
    """The same log-probs from each replica in turn, served under the name ``model``."""
    out = []
    for server in engine.servers:
        response = httpx.post(
            server.url + "/v1/completions", json=score_body(model, ids), timeout=120
        )
        assert response.status_code == 200, response.text
        out.append(parse_prompt_logprobs(response.json(), ids, server.url))
    return out


def max_gap(a: list[float], b: list[float]) -> float:
    return max(abs(x - y) for x, y in zip(a, b, strict=True))


def finished_requests(server_url: str) -> float:
    """The replica's count of finished requests, from its Prometheus metrics."""
    text = httpx.get(server_url + "/metrics", timeout=10).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("vllm:request_success_total")
    )


def test_requests_are_spread_over_the_replicas(replicas: VLLMEngine) -> None:
    before = [finished_requests(s.url) for s in replicas.servers]
    prompt = replicas.tokenizer.encode("Count: 1, 2, 3,")
    params = SamplingParams(max_tokens=16, temperature=1.0)
    futures = [replicas.submit(prompt, params) for _ in range(8)]
    assert all(len(f.result(timeout=300)) == 1 for f in futures)
    served = [finished_requests(s.url) - b for s, b in zip(replicas.servers, before, strict=True)]
    assert sum(served) == 8
    assert min(served) >= 2, served  # least-loaded: concurrent requests alternate


def test_the_launchers_lora_sync_puts_the_trainers_adapter_on_every_replica(
    replicas: VLLMEngine, real_model_path: Path, tmp_path: Path
) -> None:
    wrapper = ModelWrapper(replicas)
    exps = [e for chat in CHATS for e in wrapper.chat(chat, n=4, max_tokens=16, temperature=1.0)]
    for i, exp in enumerate(exps):
        exp.eid = EID(batch=1, task=i // 4, run=i % 4)
        exp.reward = float(i % 2)  # every group has a reward spread: the step has a gradient
    lora = {"enabled": True, "r": 8, "alpha": 16, "target_modules": ["q_proj", "v_proj"]}
    config = TrainerConfig.model_validate({"algorithm": "grpo", "lr": 1e-2, "lora": lora})
    trainer = Trainer(real_model_path, config, pad_token_id=replicas.tokenizer.pad_token_id)
    trainer.train_step(exps)

    version = sync_in_process(trainer, replicas)

    assert version == trainer.model_version == replicas.model_version == 1
    assert replicas.request_model() == "policy-v1"
    ids = replicas.tokenizer.encode(TEXT)
    trained = model_logprobs(trainer.model, ids)
    assert max_gap(trained, model_logprobs(policy(real_model_path), ids)) > 0.05
    for served in replica_logprobs(replicas, "policy-v1", ids):
        assert max_gap(served, trained) < 1e-3  # fp32 both sides: the trainer's weights

    # later versions: only the keep_versions newest adapters stay loaded, on every replica
    trainer.model.save_pretrained(tmp_path / "adapter")
    for later in (2, 3):
        replicas.update_lora_adapter(tmp_path / "adapter", version=later)
    assert [name for _, name, _ in replicas._adapters] == ["policy-v2", "policy-v3"]
    prompt = replicas.tokenizer.encode("Hi")
    for server in replicas.servers:
        for name, status in (("policy-v2", 200), ("policy-v1", 404)):
            body = {"model": name, "prompt": prompt, "max_tokens": 2}
            answer = httpx.post(server.url + "/v1/completions", json=body, timeout=60)
            assert (answer.status_code == 200) == (status == 200), (name, answer.text)


def test_a_judge_on_vllm_gets_verdicts_it_accepts(replicas: VLLMEngine) -> None:
    exps = [
        e
        for chat in CHATS
        for e in ModelWrapper(replicas).chat(chat, n=2, max_tokens=16, temperature=1.0)
    ]
    config = AuxiliaryModelConfig(
        name="judge", engine="vllm", structured_output="json_schema", max_response_tokens=64
    )
    # as build_auxiliary_model does for engine: vllm, on the replicas already started
    judge = AuxiliaryModel(
        config,
        engine=replicas,
        owns_engine=False,
        urls=lambda: [e.url for e in replicas.pool.endpoints if e.healthy],
        served_model="policy",
    )
    models = AuxiliaryModels([judge])
    pipeline = ExperiencePipeline([{"name": "llm_judge"}], models.for_operators())

    async def judge_all() -> tuple[list, dict[str, float]]:
        await pipeline.prepare()
        try:
            return await pipeline.process(exps)
        finally:
            await pipeline.close()

    try:
        kept, metrics = asyncio.run(judge_all())
    finally:
        models.close()
    assert metrics["llm_judge/failed"] == 0, metrics
    assert metrics["llm_judge/scored"] == len(kept) == len(exps) == 4
    for exp in kept:
        assert 0.0 <= exp.metrics["judge_score"] <= 1.0
        assert exp.reward == exp.metrics["judge_score"]


def test_a_full_weight_sync_reaches_every_replica(
    replicas: VLLMEngine, real_model_path: Path
) -> None:
    torch.manual_seed(1)
    model = policy(real_model_path)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.01)
    ids = replicas.tokenizer.encode(TEXT)
    expected = model_logprobs(model, ids)
    assert all(max_gap(s, expected) > 0.05 for s in replica_logprobs(replicas, "policy", ids))

    replicas.update_weights(model.state_dict(), version=replicas.model_version + 1)

    for served in replica_logprobs(replicas, "policy", ids):
        assert max_gap(served, expected) < 1e-3
