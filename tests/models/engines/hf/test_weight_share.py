"""HFEngine.share_weights: the engine reads another module's tensors in place (a trainer
of the same process), all or nothing, and a later copying update never writes into them."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

from reinforge.models.engine import SamplingParams
from reinforge.models.engines.hf import HFEngine

PROMPT = [100 + 37 * i for i in range(12)]


@pytest.fixture
def engine(own_engine: HFEngine) -> HFEngine:
    return own_engine  # these tests change the engine's weights


def trainer_like(engine: HFEngine, seed: int = 0) -> torch.nn.Module:
    """A second copy of the model with other weights, as a trainer would hold."""
    other = copy.deepcopy(engine.model)
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in other.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return other


def test_a_shared_engine_serves_the_tensors_it_was_given_and_follows_their_updates(
    engine: HFEngine,
) -> None:
    other = trainer_like(engine)
    expected = HFEngine(model=copy.deepcopy(other), tokenizer=engine.tokenizer.hf, device="cpu")
    try:
        assert engine.share_weights(other.state_dict(), version=3) is None
        assert engine.weights_shared and engine.model_version == 3
        for name, p in engine.model.named_parameters(remove_duplicate=False):
            assert p.data_ptr() == other.get_parameter(name).data_ptr(), name
        assert engine.score(PROMPT) == expected.score(PROMPT)
        # an in-place step of "the trainer" is what the engine serves next, no copy made
        with torch.no_grad():
            for p in other.parameters():
                p.mul_(0.5)
        expected.update_weights(other.state_dict())
        assert engine.score(PROMPT) == expected.score(PROMPT)
        out = engine.generate(PROMPT, SamplingParams(max_tokens=4, temperature=0.0))
        assert (
            out[0].token_ids
            == expected.generate(PROMPT, SamplingParams(max_tokens=4, temperature=0.0))[0].token_ids
        )
    finally:
        expected.close()


def test_sharing_is_refused_whole_when_a_tensor_does_not_fit(engine: HFEngine) -> None:
    before = engine.score(PROMPT)
    ptrs = [p.data_ptr() for p in engine.model.parameters()]
    other = trainer_like(engine).to(torch.bfloat16)
    why = engine.share_weights(other.state_dict())
    assert why is not None and "bfloat16" in why
    state = trainer_like(engine).state_dict()
    del state["model.norm.weight"]
    assert engine.share_weights(state) == "no tensor for model.norm.weight"
    assert not engine.weights_shared
    assert [p.data_ptr() for p in engine.model.parameters()] == ptrs
    assert engine.score(PROMPT) == before


def test_a_copying_update_after_sharing_leaves_the_lent_tensors_alone(engine: HFEngine) -> None:
    other = trainer_like(engine)
    lent = {k: v.clone() for k, v in other.state_dict().items()}
    assert engine.share_weights(other.state_dict()) is None
    fresh = trainer_like(engine, seed=1)
    engine.update_weights(fresh.state_dict())
    assert not engine.weights_shared
    for name, value in other.state_dict().items():
        assert torch.equal(value, lent[name]), name  # the trainer's weights did not move
    expected = HFEngine(model=fresh, tokenizer=engine.tokenizer.hf, device="cpu")
    try:
        assert engine.score(PROMPT) == expected.score(PROMPT)
    finally:
        expected.close()


def test_a_shared_engine_can_release_and_rebuild_without_touching_the_lent_tensors(
    engine: HFEngine,
) -> None:
    other = trainer_like(engine)
    assert engine.share_weights(other.state_dict()) is None
    engine.release_weights()
    assert engine.weights_released and not engine.weights_shared
    assert all(p.numel() > 0 for p in other.parameters())  # only the engine's views went
    assert engine.share_weights(other.state_dict()) is None  # a released engine shares again
    assert not engine.weights_released
    assert engine.model.model.embed_tokens.weight.data_ptr() == (
        other.model.embed_tokens.weight.data_ptr()
    )


def test_an_int8_engine_refuses_to_share(tiny_model_path: Path) -> None:
    eng = HFEngine(tiny_model_path, device="cpu", quantize="int8")
    try:
        assert not eng.share_weights_with_trainer
        why = eng.share_weights(trainer_like(eng).state_dict())
        assert why is not None and "int8" in why and not eng.weights_shared
    finally:
        eng.close()
