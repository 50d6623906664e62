"""``tiny-random-smolvlm``: a local VLM directory that transformers' own classes load."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from reinforge.models.catalog import known_models
from reinforge.models.vision import build_prompt, is_vision_language, split_media
from reinforge.models.vision.loading import load_vision_language


def test_catalog_names_it_and_it_is_a_vlm(tiny_vlm_path: Path, tiny_model_path: Path) -> None:
    assert "tiny-random-smolvlm" in known_models()
    assert is_vision_language(tiny_vlm_path)
    assert not is_vision_language(tiny_model_path)


def test_processor_expands_the_image_and_the_model_runs(tiny_vlm_path: Path) -> None:
    import torch

    model, processor = load_vision_language(tiny_vlm_path, torch.float32)
    assert type(model).__name__ == "Idefics3ForConditionalGeneration"
    media = split_media(
        [
            {
                "role": "user",
                "content": [
                    {"type": "image", "image": Image.new("RGB", (50, 30))},
                    {"type": "text", "text": "Hi"},
                ],
            }
        ]
    )
    prompt = build_prompt(processor, media)
    assert prompt.text.startswith("<|im_start|>user\n<image>Hi")
    image_id = processor.tokenizer.convert_tokens_to_ids("<image>")
    assert prompt.ids.count(image_id) == 16
    assert set(prompt.inputs) == {"pixel_values", "pixel_attention_mask"}
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt.ids]), **prompt.inputs).logits
    assert logits.shape == (1, len(prompt.ids), len(processor.tokenizer))


def test_message_token_length_counts_the_image_tokens(tiny_vlm_path: Path) -> None:
    import asyncio

    from reinforge.models import ModelWrapper
    from reinforge.models.engines.hf import HFEngine

    engine = HFEngine(tiny_vlm_path)
    try:
        model = ModelWrapper(engine)
        text = [{"role": "user", "content": "Hi"}]
        image = [
            {
                "role": "user",
                "content": [
                    {"type": "image", "image": Image.new("RGB", (8, 8))},
                    {"type": "text", "text": "Hi"},
                ],
            }
        ]
        plain = asyncio.run(model.get_message_token_len(text))
        with_image = asyncio.run(model.get_message_token_len(image))
        assert with_image == plain + 19  # <fake><global-img>, 16 x <image>, <fake>
    finally:
        engine.close()
