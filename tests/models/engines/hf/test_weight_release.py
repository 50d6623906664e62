"""HFEngine.release_weights: the weights' memory is given back during a training step,
the engine refuses work until a sync has brought every weight back, and then serves
exactly the synced weights (tied ones still tied)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import torch

from reinforge.models.engine import SamplingParams
from reinforge.models.engines.hf import HFEngine

PROMPT = [100 + 37 * i for i in range(12)]


@pytest.fixture
def engine(own_engine: HFEngine) -> HFEngine:
    return own_engine  # these tests change the engine's weights


def weight_bytes(model: torch.nn.Module) -> int:
    """Bytes of the distinct storages behind the parameters (views of one count once)."""
    storages = {
        p.untyped_storage().data_ptr(): p.untyped_storage().nbytes() for p in model.parameters()
    }
    return sum(storages.values())


def buckets(state: dict[str, torch.Tensor], size: int = 3) -> list[dict[str, Any]]:
    """The state dict in small buckets, as a streamed sync sends it (tied head left out)."""
    names = [n for n in state if n != "lm_head.weight"]
    return [{n: state[n] for n in names[i : i + size]} for i in range(0, len(names), size)]


def test_released_weights_give_their_memory_back_until_a_sync_restores_them(
    engine: HFEngine,
) -> None:
    model = engine.model
    assert engine.free_weights_while_training and not engine.weights_released
    before = engine.score(PROMPT)
    held = weight_bytes(model)
    assert held > 0
    torch.manual_seed(0)
    new = {
        k: v + 0.1 * torch.randn_like(v)
        for k, v in model.state_dict().items()
        if k != "lm_head.weight"  # tied: the embeddings' tensor
    }
    expected = copy.deepcopy(model)
    expected.load_state_dict(new, strict=False)

    engine.release_weights()
    assert engine.weights_released
    assert weight_bytes(model) == 0  # every parameter's storage is gone, the tied head too
    with pytest.raises(RuntimeError, match="freed for a training step"):
        engine.generate(PROMPT, SamplingParams(max_tokens=3))
    with pytest.raises(RuntimeError, match="freed for a training step"):
        engine.score(PROMPT)

    engine.receive_weights(buckets(new), version=5)
    assert not engine.weights_released and engine.model_version == 5
    assert weight_bytes(model) == held
    # rebuilt as views of one block, which the next release frees whole
    assert len({p.untyped_storage().data_ptr() for p in model.parameters()}) == 1
    assert model.lm_head.weight is model.model.embed_tokens.weight  # still one tensor
    for name, tensor in expected.state_dict().items():
        assert torch.equal(model.state_dict()[name], tensor), name
    after = engine.score(PROMPT)
    assert after != before
    with torch.inference_mode():
        ids = torch.tensor([PROMPT])
        logp = torch.log_softmax(expected(input_ids=ids).logits[0, :-1].float(), -1)
    fresh = logp.gather(-1, ids[0, 1:, None])[:, 0]
    assert torch.allclose(torch.tensor(after), fresh, atol=1e-5)
    assert len(engine.generate(PROMPT, SamplingParams(max_tokens=3))[0].token_ids) == 3


def test_rebuilt_weights_are_ordinary_tensors_as_loaded_ones_are(engine: HFEngine) -> None:
    """The engine's thread runs in inference mode, where a fresh tensor is an inference
    tensor. bf16 parameters of that kind made the demo's decode keep ~0.6 GiB more and
    run ~25% slower on an AVX-512 BF16 CPU (docs/lab/2026-12-02-rebuilt-weights.md); the
    rebuilt weights must be what loading made, ordinary tensors."""
    model = engine.model
    assert not any(p.is_inference() for p in model.parameters())
    state = {k: v.clone() for k, v in model.state_dict().items()}
    engine.release_weights()
    engine.receive_weights(buckets(state), version=1)
    assert not engine.weights_released
    assert not any(p.is_inference() for p in model.parameters())
    assert model.lm_head.weight is model.model.embed_tokens.weight


def test_a_sync_that_misses_a_released_weight_fails_and_the_engine_keeps_refusing(
    engine: HFEngine,
) -> None:
    state = {k: v.clone() for k, v in engine.model.state_dict().items()}
    engine.release_weights()
    partial = buckets(state)[:-1]
    with pytest.raises(RuntimeError, match="have not been synced back"):
        engine.receive_weights(partial, version=1)
    assert engine.weights_released and engine.model_version == 0
    with pytest.raises(RuntimeError, match="freed for a training step"):
        engine.generate(PROMPT, SamplingParams(max_tokens=2))
    engine.receive_weights(buckets(state), version=2)  # the whole state: serving again
    assert not engine.weights_released and engine.model_version == 2
    assert len(engine.generate(PROMPT, SamplingParams(max_tokens=2))[0].token_ids) == 2


def test_an_int8_engine_keeps_its_weights(tiny_model_path: Path) -> None:
    with HFEngine(tiny_model_path, device="cpu", quantize="int8") as eng:
        assert not eng.free_weights_while_training
        with pytest.raises(RuntimeError, match="keeps its weights"):
            eng.release_weights()
        assert not eng.weights_released
        assert len(eng.generate(PROMPT, SamplingParams(max_tokens=2))[0].token_ids) == 2
