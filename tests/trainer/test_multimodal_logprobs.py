"""The trainer's forward of experiences with images: the images must be fed again.

With the stored image tensors the trainer reproduces the engine's sampling
log-probabilities; without them (the placeholder tokens alone) it would not.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import torch
from PIL import Image, ImageDraw

from reinforge.algorithms import collate
from reinforge.core import Experience
from reinforge.models import ModelWrapper
from reinforge.models.engines.hf import HFEngine
from reinforge.trainer.policy_model import load_policy, merged_state_dict
from reinforge.trainer.token_logprobs import token_logprobs
from reinforge.trainer.trainer_config import TrainerConfig


def _image(circles: int) -> Image.Image:
    image = Image.new("RGB", (64, 48), "white")
    for i in range(circles):
        ImageDraw.Draw(image).ellipse((4 + 14 * i, 10, 14 + 14 * i, 20), fill="red")
    return image


def test_trainer_forward_reproduces_sampling_logprobs(tiny_vlm_path: Path) -> None:
    engine = HFEngine(tiny_vlm_path, batch_window_ms=1)
    try:
        model = ModelWrapper(engine)
        one = [{"type": "image", "image": _image(1)}, {"type": "text", "text": "Count."}]
        two = [{"type": "image", "image": _image(2)}, {"type": "image", "image": _image(3)}]
        exps = model.chat([{"role": "user", "content": one}], n=2, max_tokens=5)
        exps += model.chat([{"role": "user", "content": two}], n=1, max_tokens=7)
        exps += model.chat([{"role": "user", "content": "no image"}], n=1, max_tokens=4)
    finally:
        engine.close()
    exps = [Experience.from_bytes(e.to_bytes()) for e in exps]  # as the buffer returns them
    policy = load_policy(tiny_vlm_path, TrainerConfig())
    batch = collate(exps, pad_token_id=0)
    mask = batch.response_mask
    with torch.no_grad():
        packed, _ = token_logprobs(policy, batch, only=mask)
        full, _ = token_logprobs(policy, batch, with_logits=True)
        blind, _ = token_logprobs(policy, replace(batch, multi_modal_inputs=None), only=mask)
    assert torch.allclose(packed[mask], batch.old_logprobs[mask], atol=1e-4)
    assert torch.allclose(full[mask], batch.old_logprobs[mask], atol=1e-4)
    with_images = mask.clone()
    with_images[-1] = False  # the text-only row does not depend on images
    assert not torch.allclose(blind[with_images], batch.old_logprobs[with_images], atol=1e-3)


def test_lora_and_gradient_checkpointing_backpropagate_through_a_vlm(tiny_vlm_path: Path) -> None:
    engine = HFEngine(tiny_vlm_path, batch_window_ms=1)
    try:
        content = [{"type": "image", "image": _image(2)}, {"type": "text", "text": "Count."}]
        exps = ModelWrapper(engine).chat([{"role": "user", "content": content}], n=2, max_tokens=4)
        batch = collate(exps, pad_token_id=0)
        lora = {"enabled": True, "r": 4, "alpha": 8, "target_modules": ["q_proj", "v_proj"]}
        for cfg in (TrainerConfig(gradient_checkpointing=True), TrainerConfig(lora=lora)):
            policy = load_policy(tiny_vlm_path, cfg)
            logp, _ = token_logprobs(policy, batch, only=batch.response_mask)
            assert torch.allclose(
                logp[batch.response_mask], batch.old_logprobs[batch.response_mask], atol=1e-4
            )
            logp[batch.response_mask].sum().backward()
            assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in policy.parameters())
            engine.update_weights(merged_state_dict(policy))  # names the engine's model has
    finally:
        engine.close()
