"""Loading a local transformers model directory for the hf engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch


def load_causal_lm(model_path: str | Path, device: str, dtype: torch.dtype) -> tuple[Any, Any]:
    """Load a local HF model directory (no hub access) and its tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(model_path)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"model directory '{path}' has no config.json")
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, local_files_only=True)
    model.to(device).eval()
    return model, tokenizer
