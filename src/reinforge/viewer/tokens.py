"""Turn a run's token ids back into text, one piece per token, without any download.

The page colours each response token by its mask, advantage or log-probability, so
it needs the text of every single token. Which tokenizer made the ids follows from
the run's ``config.json``:

* the mock engine with its byte tokenizer: ``ByteTokenizer`` (no files needed);
* otherwise ``model.model_path``: a local Hugging Face directory, or a catalog name
  whose converted copy already sits in the reinforge cache. It is loaded with
  ``AutoTokenizer.from_pretrained(..., local_files_only=True)``; nothing is converted
  or fetched.

If no tokenizer loads, ``RawIds`` shows each id as ``⟨id⟩``: the colours still line
up with the tokens, and the page shows the decoded ``response_text`` beside them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Protocol

logger = logging.getLogger(__name__)


class TokenDecoder(Protocol):
    """Text of single tokens; ``name`` says which tokenizer it is (shown on the page)."""

    name: str

    def pieces(self, ids: list[int]) -> list[str]: ...


class RawIds:
    """Fallback when no tokenizer is available: each token shown as its id."""

    name = "raw ids (no tokenizer found)"

    def pieces(self, ids: list[int]) -> list[str]:
        return [f"⟨{i}⟩" for i in ids]


class ByteDecoder:
    """The mock engine's byte tokenizer (id = byte + 3; 0-2 are special)."""

    name = "mock byte tokenizer"

    def __init__(self) -> None:
        from reinforge.models.tokenizer import ByteTokenizer

        self.tokenizer = ByteTokenizer()

    def pieces(self, ids: list[int]) -> list[str]:
        return [self.tokenizer.decode([i], skip_special_tokens=False) for i in ids]


class HFDecoder:
    """A transformers tokenizer read from a local directory."""

    def __init__(self, tokenizer: Any, source: Path) -> None:
        self.tokenizer = tokenizer
        self.name = f"transformers tokenizer from {source}"

    def pieces(self, ids: list[int]) -> list[str]:
        return [self.tokenizer.decode([i], skip_special_tokens=False) for i in ids]


def local_model_dir(model_cfg: dict[str, Any]) -> Path | None:
    """The local directory ``model.model_path`` names, or None.

    A path is taken as is; a catalog name (``smollm2-135m-instruct``) only if its
    converted copy is already in the cache, so opening the viewer never starts the
    one-off GGUF conversion.
    """
    name = model_cfg.get("model_path")
    if not name:
        return None
    path = Path(str(name)).expanduser()
    if path.is_dir():
        return path
    from reinforge.models.catalog import default_cache_dir

    cache_dir = model_cfg.get("cache_dir")
    cache = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    cached = cache / str(name)
    if (cached / "config.json").is_file() or (cached / "tokenizer.json").is_file():
        return cached
    return None


def load_decoder(config: dict[str, Any]) -> TokenDecoder:
    """The decoder for a run's config (the parsed ``config.json``); never raises."""
    model_cfg = config.get("model") or {}
    mock_cfg = model_cfg.get("mock") or {}
    if model_cfg.get("engine") == "mock" and mock_cfg.get("tokenizer", "bytes") == "bytes":
        return ByteDecoder()
    directory = local_model_dir(model_cfg)
    if directory is None:
        return RawIds()
    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    except Exception as exc:  # any failure just means: show ids
        logger.warning("viewer: no tokenizer from %s (%s); showing token ids", directory, exc)
        return RawIds()
    return HFDecoder(tokenizer, directory)
