"""``model.hf.quantize: int8``: the engine samples through int8 copies of its Linear layers,
records the log-probs of what it sampled from, scores in fp32, and re-makes the int8
copies after every weight sync."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from reinforge.models.engine import SamplingParams
from reinforge.models.engines.hf import HFEngine, load_causal_lm
from reinforge.models.engines.hf.int8 import Int8Linears
from reinforge.models.model_config import HFEngineOptions

PROMPT = [100 + 37 * i for i in range(12)]


def forward_logprobs(model: Any, prompt: list[int], response: list[int]) -> list[float]:
    """log p(response[i] | prompt + response[:i]) from one unbatched forward pass."""
    ids = torch.tensor([prompt + response])
    with torch.inference_mode():
        logits = model(input_ids=ids).logits[0].float()
    logp = torch.log_softmax(logits[len(prompt) - 1 : -1], dim=-1)
    return logp.gather(-1, torch.tensor(response)[:, None])[:, 0].tolist()


def int8_reference(path: Path, state: dict[str, torch.Tensor]) -> Any:
    """A separate model with ``state``'s weights and int8 copies made from them."""
    model, _ = load_causal_lm(path, "cpu", torch.float32)
    model.load_state_dict(state, strict=False)
    Int8Linears(model)
    return model


@pytest.fixture
def int8_engine(tiny_model_path: Path) -> Iterator[HFEngine]:
    eng = HFEngine(tiny_model_path, device="cpu", quantize="int8")
    yield eng
    eng.close()


def test_int8_sampling_records_the_int8_models_logprobs(
    int8_engine: HFEngine, tiny_model_path: Path
) -> None:
    completions = int8_engine.generate(PROMPT, SamplingParams(n=3, max_tokens=10, seed=1))
    fp32, _ = load_causal_lm(tiny_model_path, "cpu", torch.float32)
    int8 = int8_reference(tiny_model_path, fp32.state_dict())
    moved = 0.0
    for c in completions:
        assert len(c.token_ids) == len(c.logprobs) > 0
        assert all(0 <= t < int8_engine.vocab_size for t in c.token_ids)
        assert c.finish_reason in ("stop", "length")
        # token-exact: what a fresh int8 forward pass gives the sampled tokens
        expected = forward_logprobs(int8, PROMPT, c.token_ids)
        assert torch.allclose(torch.tensor(c.logprobs), torch.tensor(expected), atol=1e-4)
        full = torch.tensor(forward_logprobs(fp32, PROMPT, c.token_ids))
        moved = max(moved, (torch.tensor(c.logprobs) - full).abs().max().item())
        # scores (the weight check) stay on the fp32 weights
        scored = int8_engine.score(PROMPT + c.token_ids)[len(PROMPT) - 1 :]
        assert torch.allclose(torch.tensor(scored), full, atol=1e-4)
    assert moved > 1e-3  # sampling really went through int8, not the fp32 weights


def test_a_sync_requantizes_the_weights(int8_engine: HFEngine, tiny_model_path: Path) -> None:
    greedy = SamplingParams(temperature=0.0, max_tokens=8)
    before = int8_engine.generate(PROMPT, greedy)[0]
    torch.manual_seed(0)
    # only Linear weights change: sampling can see the sync only through new int8 copies
    state = {
        k: v + 0.5 * torch.randn_like(v)
        for k, v in int8_engine.model.state_dict().items()
        if k.endswith("proj.weight")
    }
    int8_engine.update_weights(state)
    after = int8_engine.generate(PROMPT, greedy)[0]
    assert (after.token_ids, after.logprobs) != (before.token_ids, before.logprobs)
    reference = int8_reference(tiny_model_path, int8_engine.model.state_dict())
    expected = forward_logprobs(reference, PROMPT, after.token_ids)
    assert torch.allclose(torch.tensor(after.logprobs), torch.tensor(expected), atol=1e-4)


def test_the_setting_is_checked() -> None:
    assert HFEngineOptions(quantize="int8").quantize == "int8"
    assert HFEngineOptions().quantize is None
    with pytest.raises(ValueError, match="quantize"):
        HFEngineOptions(quantize="int4")
    from reinforge.models.engines.hf.int8 import quantize_for_sampling

    with pytest.raises(ValueError, match=r"model\.hf\.quantize: 'int4'"):
        quantize_for_sampling(torch.nn.Linear(4, 4), "int4")
    assert quantize_for_sampling(torch.nn.Linear(4, 4), None) is None


def test_the_config_setting_reaches_the_engine() -> None:
    from reinforge.models.model_config import ModelConfig

    cfg = ModelConfig(model_path="tiny-random-smollm2", engine="hf", hf={"quantize": "int8"})
    engine = cfg.create_engine()
    try:
        assert engine._int8 is not None and engine._int8.packs == 1
        assert engine.generate(PROMPT, SamplingParams(max_tokens=3))[0].token_ids
    finally:
        engine.close()
