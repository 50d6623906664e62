"""The hf engine with a vision-language model: prompts with images sample exactly.

A prompt with images is prefilled alone and then decodes in the running batch, next
to text requests; the log-probability recorded for each sampled token is the one a
fresh forward pass with the same images gives.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from PIL import Image, ImageDraw

from reinforge.models.engine import SamplingParams
from reinforge.models.engines.hf import HFEngine
from reinforge.models.engines.mock import MockEngine
from reinforge.models.vision import build_prompt, split_media


def _prompt(engine: HFEngine, radius: int) -> tuple[list[int], dict[str, torch.Tensor]]:
    image = Image.new("RGB", (64, 64), "white")
    ImageDraw.Draw(image).ellipse((10, 10, 10 + radius, 10 + radius), fill="red")
    message = {
        "role": "user",
        "content": [{"type": "image", "image": image}, {"type": "text", "text": "How many?"}],
    }
    prompt = build_prompt(engine.processor, split_media([message]))
    return prompt.ids, prompt.inputs


@pytest.fixture(scope="module")
def engine(tiny_vlm_path: Path) -> HFEngine:
    eng = HFEngine(tiny_vlm_path, batch_window_ms=5, prefix_cache_tokens=4096)
    yield eng
    eng.close()


def test_sampled_logprobs_match_a_forward_with_the_images(engine: HFEngine) -> None:
    assert engine.processor is not None and engine.max_model_len == 2048
    jobs = []
    for radius in (8, 30):
        ids, inputs = _prompt(engine, radius)
        jobs.append(
            (ids, inputs, engine.submit_multimodal(ids, SamplingParams(n=2, max_tokens=6), inputs))
        )
    text = engine.submit(engine.tokenizer.encode("hello"), SamplingParams(n=2, max_tokens=6))
    assert len(text.result(timeout=60)) == 2
    for ids, inputs, fut in jobs:
        for comp in fut.result(timeout=60):
            full = torch.tensor([ids + comp.token_ids])
            with torch.no_grad():
                logits = engine.model(input_ids=full, **inputs).logits[0, len(ids) - 1 : -1]
            expected = torch.log_softmax(logits.float(), -1)
            expected = expected.gather(-1, torch.tensor(comp.token_ids)[:, None])[:, 0]
            assert torch.allclose(expected, torch.tensor(comp.logprobs), atol=1e-4)
    assert engine.stats["prefix_hits"] == 0  # prompts with images never reuse stored KV


def test_same_ids_other_image_other_distribution(engine: HFEngine) -> None:
    (ids, small), (_, large) = _prompt(engine, 8), _prompt(engine, 40)
    params = SamplingParams(n=1, max_tokens=1, temperature=0, top_logprobs=3)
    a = engine.submit_multimodal(ids, params, small).result(timeout=60)[0]
    b = engine.submit_multimodal(ids, params, large).result(timeout=60)[0]
    assert a.top_logprobs != b.top_logprobs


def test_text_only_engines_refuse_images(tiny_model_path: Path) -> None:
    text = HFEngine(tiny_model_path)
    try:
        fut = text.submit_multimodal([1, 2], SamplingParams(), {"pixel_values": torch.zeros(1)})
        with pytest.raises(ValueError, match="text-only"):
            fut.result(timeout=10)
    finally:
        text.close()
    with pytest.raises(ValueError, match="does not take images"):
        MockEngine().submit_multimodal([1], SamplingParams(), {}).result()
