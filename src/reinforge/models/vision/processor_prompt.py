"""Messages with images -> the processor's prompt ids and extra model inputs.

The processor renders the chat template (media parts become the model's
placeholder, e.g. ``<image>``), then expands each placeholder into the image's
tokens and turns the image into tensors. The expanded ids are what the model sees
and what the experience records; the tensors (everything but ``input_ids`` and
``attention_mask``) go with them to the engine and, stored with the experience, to
the trainer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from reinforge.models.vision.images import MediaInputError
from reinforge.models.vision.media_messages import MediaMessages

_TEXT_INPUTS = ("input_ids", "attention_mask")


@dataclass
class MultiModalPrompt:
    #: the rendered chat template (one placeholder per image)
    text: str
    #: the processor's ids: placeholders expanded into each image's tokens
    ids: list[int]
    #: the processor's other tensors (``pixel_values``...)
    inputs: dict[str, torch.Tensor]


def unexpanded_ids(processor: Any, text: str) -> list[int]:
    """The rendered text's ids before the processor expands the image placeholders
    (what an engine that runs the processor itself, vLLM, is sent)."""
    return list(processor.tokenizer(text, add_special_tokens=False)["input_ids"])


def build_prompt(
    processor: Any, media: MediaMessages, chat_template: str | None = None
) -> MultiModalPrompt:
    """The rendered text, expanded ids and model inputs of one prompt."""
    kwargs: dict[str, Any] = {"add_generation_prompt": True, "tokenize": False}
    if chat_template:
        kwargs["chat_template"] = chat_template
    text = processor.apply_chat_template(media.for_template, **kwargs)
    call: dict[str, Any] = {"text": [text], "return_tensors": "pt"}
    if media.images:
        call["images"] = [media.images]
    if media.videos:
        if getattr(processor, "video_processor", None) is None:
            raise MediaInputError(f"{type(processor).__name__} takes no videos")
        call["videos"] = [media.videos]
    try:
        encoded = processor(**call)
    except MediaInputError:
        raise
    except (ValueError, TypeError) as exc:  # e.g. placeholders and images do not match
        raise MediaInputError(f"the processor refused the prompt's media: {exc}") from exc
    ids = encoded["input_ids"][0].tolist()
    inputs = {
        name: value.detach().cpu()
        for name, value in encoded.items()
        if name not in _TEXT_INPUTS and isinstance(value, torch.Tensor)
    }
    return MultiModalPrompt(text, ids, inputs)
