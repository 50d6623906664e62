"""Single-turn workflows over images (and videos): Trinity-RFT's ``SimpleMMWorkflow``.

The row's media are read from ``raw_task[format.image_key]`` (default ``"image"``)
and ``raw_task[format.video_key]`` (default ``"video"``): one item or a list, each a
local path, ``file://`` or ``data:`` URL, bytes or a PIL image. The user message is
the formatted prompt with every ``<image>`` / ``<video>`` tag turned into the next
media part, in order; media without a tag go before the text, as Trinity does. A
reward function is required. The policy must be a vision-language model; a missing
or unreadable image, or images for a text-only model, fail the task with the
reason (``MediaInputError``), and the run goes on.

``workflow_args.image_dir`` (optional) is the folder relative image paths are read
from (default: the working directory).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from reinforge.core import Experience, Task
from reinforge.models.vision import MediaInputError
from reinforge.workflows.simple import SimpleWorkflow
from reinforge.workflows.workflow import WORKFLOWS

_TAG = re.compile(r"(<image>|<video>)")
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]+:")


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _under(folder: str, item: Any) -> Any:
    """A relative path as a path under ``folder``; anything else (URLs, absolute paths,
    bytes, images) as it is."""
    if not isinstance(item, str) or _URL.match(item) or Path(item).is_absolute():
        return item
    return str(Path(folder) / item)


def mm_user_message(prompt: str, images: list[Any], videos: list[Any]) -> dict[str, Any]:
    """The user message of ``prompt`` with its ``<image>``/``<video>`` tags as media parts."""
    parts: list[dict[str, Any]] = []
    used = {"image": 0, "video": 0}
    media = {"image": images, "video": videos}
    for piece in _TAG.split(prompt):
        if piece in ("<image>", "<video>"):
            kind = piece[1:-1]
            if used[kind] >= len(media[kind]):
                raise MediaInputError(
                    f"the prompt has more {piece} tags than the row has {kind}s "
                    f"({len(media[kind])})"
                )
            parts.append({"type": kind, kind: media[kind][used[kind]]})
            used[kind] += 1
        elif piece:
            parts.append({"type": "text", "text": piece})
    extra = [{"type": "image", "image": x} for x in images[used["image"] :]]
    extra += [{"type": "video", "video": x} for x in videos[used["video"] :]]
    return {"role": "user", "content": extra + parts}


@WORKFLOWS.register_module("simple_mm_workflow")
class SimpleMMWorkflow(SimpleWorkflow):
    """Chat once about the row's images; score each of the ``n`` replies (``run`` is
    ``SimpleWorkflow``'s, on these messages)."""

    def reset(self, task: Task) -> None:
        super().reset(task)
        image_key = self.format_args.image_key or "image"
        video_key = self.format_args.video_key or "video"
        self.images = _as_list(self.raw_task.get(image_key))
        self.videos = _as_list(self.raw_task.get(video_key))
        image_dir = self.workflow_args.get("image_dir")
        if image_dir:
            self.images = [_under(image_dir, x) for x in self.images]

    def format_messages(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        if self.system_prompt:
            messages.append({"role": "system", "content": self.system_prompt})
        template = self.format_args.prompt_template
        user = template.replace("{prompt}", self.task_desc) if template else self.task_desc
        messages.append(mm_user_message(user, self.images, self.videos))
        if self.reply_prefix:
            messages.append({"role": "assistant", "content": self.reply_prefix})
        return messages


@WORKFLOWS.register_module("async_simple_mm_workflow")
class AsyncSimpleMMWorkflow(SimpleMMWorkflow):
    """``SimpleMMWorkflow`` on the event loop (``chat_async``)."""

    is_async = True

    async def run_async(self) -> list[Experience]:
        return self.score(await self.model.chat_async(self.format_messages(), **self.chat_kwargs()))
