"""Build an engine from plain settings (the ``model`` section of a config)."""

from __future__ import annotations

from typing import Any

from reinforge.models.engine import InferenceEngine


def create_engine(
    engine: str,
    model_path: str,
    *,
    cache_dir: str | None = None,
    options: dict[str, Any] | None = None,
) -> InferenceEngine:
    """``engine`` is ``hf`` (embedded transformers), ``mock`` (scripted policy), ``openai``
    (a running OpenAI-compatible server) or ``vllm`` (servers reinforge starts)."""
    options = dict(options or {})
    if engine == "mock":
        from reinforge.models.engines.mock import MockEngine

        tokenizer = None
        if options.pop("tokenizer", "bytes") == "model":
            from transformers import AutoTokenizer

            from reinforge.models.catalog import resolve_model_path
            from reinforge.models.tokenizer import HFChatTokenizer

            path = resolve_model_path(model_path, cache_dir)
            tokenizer = HFChatTokenizer(AutoTokenizer.from_pretrained(path, local_files_only=True))
        return MockEngine(tokenizer=tokenizer, **options)
    if engine == "hf":
        from reinforge.models.catalog import resolve_model_path
        from reinforge.models.engines.hf import HFEngine

        return HFEngine(resolve_model_path(model_path, cache_dir), **options)
    if engine == "openai":
        from reinforge.models.catalog import resolve_model_path
        from reinforge.models.engines.openai import OpenAIEngine

        tokenizer_path = resolve_model_path(model_path, cache_dir)
        return OpenAIEngine(tokenizer_path=tokenizer_path, **options)
    if engine == "vllm":
        from reinforge.models.catalog import resolve_model_path
        from reinforge.models.engines.vllm import VLLMEngine

        return VLLMEngine(resolve_model_path(model_path, cache_dir), **options)
    raise ValueError(f"unknown engine '{engine}'; known engines: hf, mock, openai, vllm")
