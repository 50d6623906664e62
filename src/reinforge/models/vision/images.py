"""Loading an image from what a task or a request names: never from the network.

Accepted: a PIL image, raw bytes, a ``data:image/...;base64,`` URL, a ``file://``
URL or a local path. An ``http(s)`` URL is refused (reinforge runs without network
access), as are missing and unreadable files, each with a ``MediaInputError`` that
says which image and why; a task fails with that reason, an HTTP request gets a 400.
"""

from __future__ import annotations

import base64
import binascii
import io
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse


class MediaInputError(ValueError):
    """An image or video that cannot be used: missing, unreadable, remote, or given to a
    text-only model."""


def load_image(source: Any, base_dir: str | Path | None = None) -> Any:
    """A ``PIL.Image`` in RGB for ``source`` (see the module docstring); relative paths
    are resolved against ``base_dir`` when given, else the working directory."""
    from PIL import Image

    if isinstance(source, Image.Image):
        return source.convert("RGB") if source.mode != "RGB" else source
    if isinstance(source, bytes | bytearray):
        return _open(io.BytesIO(bytes(source)), "the image bytes")
    if isinstance(source, dict):  # {"url": ...} (OpenAI) or {"path"/"bytes": ...} (datasets)
        for key in ("url", "path", "bytes", "image"):
            if source.get(key) is not None:
                return load_image(source[key], base_dir)
        raise MediaInputError(f"image object {sorted(source)} names no url, path or bytes")
    if not isinstance(source, str | Path):
        raise MediaInputError(f"cannot read an image from a {type(source).__name__}")
    text = str(source)
    if text.startswith("data:"):
        return _open(io.BytesIO(_data_url_bytes(text)), "the data URL")
    scheme = urlparse(text).scheme.lower()
    if scheme in ("http", "https"):
        raise MediaInputError(
            f"image URL {text[:80]!r} is remote; reinforge has no network access: pass the "
            "image as a data: URL or a local file"
        )
    if scheme == "file":
        path = Path(unquote(urlparse(text).path))
    elif scheme and len(scheme) > 1:  # a one-letter scheme is a Windows drive
        raise MediaInputError(f"image URL scheme '{scheme}' is not supported: {text[:80]!r}")
    else:
        path = Path(text).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
    if not path.is_file():
        raise MediaInputError(f"image file '{path}' does not exist")
    return _open(path, f"image file '{path}'")


def _data_url_bytes(url: str) -> bytes:
    head, _, payload = url.partition(",")
    if not head.startswith("data:image/") or not payload:
        raise MediaInputError(f"data URL {url[:40]!r}... is not a data:image/... URL")
    try:
        return (
            base64.b64decode(payload, validate=True)
            if ";base64" in head
            else unquote(payload).encode("latin-1")
        )
    except (binascii.Error, ValueError) as exc:
        raise MediaInputError(f"data URL {url[:40]!r}... has a bad payload: {exc}") from exc


def _open(source: Any, what: str) -> Any:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(source) as image:
            image.load()
            return image.convert("RGB")
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise MediaInputError(f"{what} is not a readable image: {exc}") from exc


def image_data_url(image: Any) -> str:
    """A PNG ``data:`` URL of a PIL image (how in-memory images are recorded in messages)."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
