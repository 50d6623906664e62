"""The rollout model's settings as Trinity-RFT workflows read them (``model.config``).

Trinity's ``ModelWrapper`` carries an ``InferenceModelConfig``; workflows read it to
load the tokenizer themselves (``AutoTokenizer.from_pretrained(model.model_path,
trust_remote_code=model.config.trust_remote_code)``) or to size their prompts. The
wrapper here builds one from its engine, so those reads give reinforge's values.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class InferenceModelConfig:
    """What the rollout model is and how long its inputs and outputs may be."""

    #: the local folder of the weights (tokenizer included), or the name given when
    #: the engine has no such folder (the mock engine's byte tokenizer)
    model_path: str
    #: ``hf``, ``mock``, ``openai``, ``vllm`` (the engine's package)
    engine_type: str
    #: prompt plus reply, in tokens (None: the model's own limit)
    max_model_len: int | None = None
    #: the default reply budget of a chat or generate call
    max_response_tokens: int | None = None
    max_prompt_tokens: int | None = None
    chat_template: str | None = None
    enable_history: bool = False
    enable_thinking: bool = False
    enable_lora: bool = False
    enable_openai_api: bool = True
    #: reinforge loads only local models and never runs their code
    trust_remote_code: bool = False
    temperature: float = 1.0
    top_p: float = 1.0


def engine_type(engine: Any) -> str:
    """The engine's package name under ``reinforge.models.engines`` (else its class name)."""
    parts = type(engine).__module__.split(".")
    if "engines" in parts and parts.index("engines") + 1 < len(parts):
        return parts[parts.index("engines") + 1]
    return type(engine).__name__


def weights_folder(engine: Any) -> str | None:
    """The local folder the engine's weights or tokenizer were loaded from, if any."""
    for name in ("model_path", "base_model_path"):
        value = getattr(engine, name, None)
        if value and Path(value).is_dir():
            return str(value)
    # a mock engine with a model's tokenizer: the folder the tokenizer came from
    hf_tokenizer = getattr(getattr(engine, "tokenizer", None), "hf", None)
    value = getattr(hf_tokenizer, "name_or_path", None)
    if value and Path(value).is_dir():
        return str(value)
    return None
