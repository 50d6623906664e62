"""Images and videos for vision-language policies: loading them offline, finding them in
chat messages, and turning messages into the processor's token ids and model inputs."""

from reinforge.models.vision.images import MediaInputError, load_image
from reinforge.models.vision.loading import is_vision_language, load_vision_language
from reinforge.models.vision.media_messages import MediaMessages, has_media, split_media
from reinforge.models.vision.processor_prompt import MultiModalPrompt, build_prompt

__all__ = [
    "MediaInputError",
    "MediaMessages",
    "MultiModalPrompt",
    "build_prompt",
    "has_media",
    "is_vision_language",
    "load_image",
    "load_vision_language",
    "split_media",
]
