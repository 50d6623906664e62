"""Chats whose messages carry images: the prompt comes from the model's processor.

A text-only model (an engine without a processor) refuses them with a
``MediaInputError`` saying so, before anything reaches the engine; the workflow's
task fails with that reason and the run goes on.
"""

from __future__ import annotations

from typing import Any

from reinforge.models.engine import ImageSource
from reinforge.models.vision import MediaInputError, build_prompt, split_media
from reinforge.models.vision.images import image_data_url
from reinforge.models.vision.processor_prompt import MultiModalPrompt, unexpanded_ids


def multimodal_prompt(
    engine: Any, model_name: str, messages: list[dict[str, Any]], chat_template: str | None
) -> tuple[MultiModalPrompt, list[dict[str, Any]], ImageSource | None]:
    """The processor's prompt for ``messages``, the messages as recorded (JSON-safe),
    and, for an engine that ``needs_image_source``, the prompt before expansion."""
    processor = getattr(engine, "processor", None)
    if processor is None:
        raise MediaInputError(
            f"the messages have images, but the model '{model_name}' is text-only "
            f"({type(engine).__name__} has no image processor); use a vision-language model "
            "(engine: hf with a model directory that has a processor)"
        )
    media = split_media(messages)
    prompt = build_prompt(processor, media, chat_template)
    source = None
    if getattr(engine, "needs_image_source", False):
        if media.videos:
            raise MediaInputError(f"{type(engine).__name__} takes no videos")
        urls = [image_data_url(image) for image in media.images]
        source = ImageSource(unexpanded_ids(processor, prompt.text), urls)
    return prompt, media.for_record, source
