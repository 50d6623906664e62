"""Images and videos inside chat messages.

Content parts that carry media, in the shapes workflows and clients send:
``{"type": "image", "image": X}`` (Trinity-RFT / qwen-vl-utils), ``{"type":
"image_url", "image_url": {"url": X}}`` (OpenAI), and ``{"type": "video", "video":
X}`` / ``{"type": "video_url", ...}``. ``split_media`` pulls them out, in order, and
gives two copies of the messages: one for the chat template (each media part
reduced to ``{"type": "image"}`` / ``{"type": "video"}``, which processors' templates
render as their placeholders) and one to record with the experience (JSON-safe:
each image as its path or a ``data:`` URL).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reinforge.models.vision.images import MediaInputError, image_data_url, load_image

_IMAGE_TYPES = ("image", "image_url", "input_image")
_VIDEO_TYPES = ("video", "video_url")


def _kind(part: Any) -> str | None:
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if kind in _IMAGE_TYPES:
        return "image"
    if kind in _VIDEO_TYPES:
        return "video"
    return None


def has_media(messages: list[dict[str, Any]]) -> bool:
    """Whether any message has an image or video content part."""
    return any(
        _kind(part) is not None
        for msg in messages
        if isinstance(msg.get("content"), list)
        for part in msg["content"]
    )


@dataclass
class MediaMessages:
    """Messages with their media taken out (see the module docstring)."""

    for_template: list[dict[str, Any]]
    for_record: list[dict[str, Any]]
    images: list[Any] = field(default_factory=list)
    videos: list[Any] = field(default_factory=list)


def _payload(part: dict[str, Any], kind: str) -> Any:
    for key in (part.get("type"), kind, f"{kind}_url", "url"):
        value = part.get(key) if key else None
        if value is not None:
            return value["url"] if isinstance(value, dict) and "url" in value else value
    raise MediaInputError(f"a '{part.get('type')}' content part names no {kind}")


def _recorded(source: Any, image: Any) -> str:
    """How an image is written into the recorded messages: its path/URL, or a data URL."""
    if isinstance(source, str | Path):
        return str(source)
    return image_data_url(image)


def split_media(
    messages: list[dict[str, Any]], base_dir: str | Path | None = None
) -> MediaMessages:
    """Load every image (``load_image``; videos are passed on as given) and split the
    messages; raises ``MediaInputError`` for an image that cannot be loaded."""
    out = MediaMessages([], [])
    for msg in messages:
        content = msg.get("content")
        if not isinstance(content, list):
            out.for_template.append(msg)
            out.for_record.append(msg)
            continue
        template_parts, record_parts = [], []
        for part in content:
            kind = _kind(part)
            if kind == "image":
                source = _payload(part, "image")
                image = load_image(source, base_dir)
                out.images.append(image)
                template_parts.append({"type": "image"})
                record_parts.append(
                    {"type": "image_url", "image_url": {"url": _recorded(source, image)}}
                )
            elif kind == "video":
                source = _payload(part, "video")
                out.videos.append(source)
                template_parts.append({"type": "video"})
                record_parts.append(
                    {"type": "video", "video": source if isinstance(source, str) else "<video>"}
                )
            else:
                template_parts.append(part)
                record_parts.append(part)
        out.for_template.append({**msg, "content": template_parts})
        out.for_record.append({**msg, "content": record_parts})
    return out
