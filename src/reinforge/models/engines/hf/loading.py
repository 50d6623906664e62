"""Loading a local transformers model directory for the hf engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch


def load_causal_lm(model_path: str | Path, device: str, dtype: torch.dtype) -> tuple[Any, Any]:
    """Load a local HF model directory (no hub access) and its tokenizer; for a
    vision-language model (``is_vision_language``) the second item is its processor."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from reinforge.models.vision.loading import is_vision_language, load_vision_language

    path = Path(model_path)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"model directory '{path}' has no config.json")
    if is_vision_language(path):
        model, processor = load_vision_language(path, dtype)
        model.to(device).eval()
        return model, processor
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, local_files_only=True)
    model.to(device).eval()
    return model, tokenizer
