"""Chats whose messages carry images: the prompt comes from the model's processor.

A text-only model (an engine without a processor) refuses them with a
``MediaInputError`` saying so, before anything reaches the engine; the workflow's
task fails with that reason and the run goes on.
"""

from __future__ import annotations

from typing import Any

from reinforge.models.vision import MediaInputError, build_prompt, split_media
from reinforge.models.vision.processor_prompt import MultiModalPrompt


def multimodal_prompt(
    engine: Any, model_name: str, messages: list[dict[str, Any]], chat_template: str | None
) -> tuple[MultiModalPrompt, list[dict[str, Any]]]:
    """The processor's prompt for ``messages`` and the messages as recorded (JSON-safe)."""
    processor = getattr(engine, "processor", None)
    if processor is None:
        raise MediaInputError(
            f"the messages have images, but the model '{model_name}' is text-only "
            f"({type(engine).__name__} has no image processor); use a vision-language model "
            "(engine: hf with a model directory that has a processor)"
        )
    media = split_media(messages)
    return build_prompt(processor, media, chat_template), media.for_record
