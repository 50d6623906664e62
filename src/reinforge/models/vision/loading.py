"""Loading a vision-language model directory through transformers' own classes.

A model directory is a VLM when its config has a ``vision_config`` and a processor
is saved beside it; it is then loaded with ``AutoModelForImageTextToText`` and
``AutoProcessor``, from local files only (no hub access).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_PROCESSOR_FILES = ("processor_config.json", "preprocessor_config.json")


def is_vision_language(model_path: str | Path) -> bool:
    """Whether the local directory holds a vision-language model and its processor."""
    path = Path(model_path)
    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return "vision_config" in config and any((path / f).is_file() for f in _PROCESSOR_FILES)


def model_class(model_path: str | Path) -> Any:
    """``AutoModelForImageTextToText`` for a VLM directory, else ``AutoModelForCausalLM``."""
    import transformers

    if is_vision_language(model_path):
        return transformers.AutoModelForImageTextToText
    return transformers.AutoModelForCausalLM


def load_vision_language(model_path: str | Path, dtype: Any) -> tuple[Any, Any]:
    """The model (on CPU, ``dtype``) and its processor."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    processor = AutoProcessor.from_pretrained(model_path, local_files_only=True)
    model = AutoModelForImageTextToText.from_pretrained(
        model_path, dtype=dtype, local_files_only=True
    )
    return model, processor
