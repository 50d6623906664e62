"""``tiny-random-smolvlm``: a randomly initialised vision-language model for tests.

No small VLM can be downloaded here, so one is built from a transformers config, as
``tiny-random-smollm2`` is: an Idefics3 (SmolVLM-style) model with a 1-layer vision
encoder on 64-pixel images (8-pixel patches, pixel shuffle by 2: 16 image tokens
per image) and a 2-layer Llama text model (head size 32, the smallest vLLM's CPU
attention takes, so the vLLM engine can serve it too), on the SmolLM2 tokenizer plus the
image tokens Idefics3's processor needs. Its processor is built locally
(``Idefics3Processor`` with the PIL image processor, no image splitting) with a
ChatML chat template that renders image parts as ``<image>``. The directory it
writes is a plain HF model directory, loaded through ``AutoModelForImageTextToText``
and ``AutoProcessor`` like a real VLM.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

TINY_VLM = "tiny-random-smolvlm"

#: pixels of the longest image edge; images are resized to it
IMAGE_SIZE = 64
#: ChatML (SmolLM2's format) whose message content may be a list of text/image parts
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}"
    "{% if part['type'] == 'text' %}{{ part['text'] }}"
    "{% elif part['type'] == 'image' %}<image>{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_IMAGE_TOKENS = ["<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>"]


def build_tiny_vlm(cache: Path, text_model: Path, publish: Callable[[Path, Path], None]) -> Path:
    """Write the tiny VLM under ``cache`` (tokenizer from ``text_model``); returns its folder."""
    import torch
    from transformers import AutoTokenizer, Idefics3Config, Idefics3ForConditionalGeneration
    from transformers.models.idefics3 import Idefics3Processor
    from transformers.models.idefics3.image_processing_pil_idefics3 import (
        Idefics3ImageProcessorPil,
    )

    tokenizer = AutoTokenizer.from_pretrained(text_model, local_files_only=True)
    tokenizer.add_special_tokens({"additional_special_tokens": _IMAGE_TOKENS})
    patch, scale = 8, 2
    image_seq_len = (IMAGE_SIZE // patch) ** 2 // scale**2
    image_processor = Idefics3ImageProcessorPil(
        do_resize=True,
        size={"longest_edge": IMAGE_SIZE},
        max_image_size={"longest_edge": IMAGE_SIZE},
        do_image_splitting=False,
    )
    processor = Idefics3Processor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        image_seq_len=image_seq_len,
        chat_template=CHAT_TEMPLATE,
    )
    config = Idefics3Config(
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "image_size": IMAGE_SIZE,
            "patch_size": patch,
        },
        text_config={
            "model_type": "llama",
            "vocab_size": len(tokenizer),
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "max_position_embeddings": 2048,
            "tie_word_embeddings": True,
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
            "pad_token_id": tokenizer.pad_token_id,
        },
        scale_factor=scale,
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    model = Idefics3ForConditionalGeneration(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / TINY_VLM
    tmp = Path(tempfile.mkdtemp(prefix=f".{TINY_VLM}-", dir=cache))
    model.save_pretrained(tmp, safe_serialization=True)
    processor.save_pretrained(tmp)
    publish(tmp, target)
    return target
