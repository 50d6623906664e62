"""Write the trainer's weights where a vLLM server can reload them from."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

#: files a vLLM reload needs beside the weights (a vision-language model's processor
#: settings too: vLLM reads them from the model folder)
_CONFIG_FILES = (
    "config.json",
    "generation_config.json",
    "processor_config.json",
    "preprocessor_config.json",
    "chat_template.jinja",
)


def complete_state_dict(state_dict: dict[str, Any], base_dir: str | Path) -> dict[str, Any]:
    """``state_dict`` over the base model's tensors: a merged LoRA sends only the layers
    it changed, but a vLLM reload reads a whole checkpoint."""
    from safetensors import safe_open

    files = sorted(Path(base_dir).glob("*.safetensors"))
    names: set[str] = set()
    for file in files:
        with safe_open(str(file), "pt") as f:
            names.update(f.keys())
    if not names or names <= state_dict.keys():
        return state_dict
    out: dict[str, Any] = {}
    for file in files:
        with safe_open(str(file), "pt") as f:
            for name in f.keys():  # noqa: SIM118 (safe_open has no __iter__)
                if name not in state_dict:
                    out[name] = f.get_tensor(name)
    out.update(state_dict)
    return out


def write_full_weights(
    state_dict: dict[str, Any], base_dir: str | Path, folder: Path, dtype: str | None = None
) -> Path:
    """Save ``state_dict`` (HF parameter names, completed from the base model's files)
    as one safetensors file in ``folder``, floating tensors in ``dtype`` when given (the
    servers' own: nothing gained by writing and reading fp32 for a bf16 server).

    Tensors that share storage (tied embeddings) are written once, under the first
    name; the model's config says they are tied and vLLM ties them again on load.
    The folder appears complete or not at all (written aside, then renamed).
    """
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    seen: set[tuple[int, int]] = set()
    tensors: dict[str, torch.Tensor] = {}
    for name, value in complete_state_dict(state_dict, base_dir).items():
        tensor = value.detach() if isinstance(value, torch.Tensor) else torch.as_tensor(value)
        key = (tensor.untyped_storage().data_ptr(), tensor.storage_offset())
        if key in seen:
            continue
        seen.add(key)
        if dtype and dtype != "auto" and tensor.is_floating_point():
            tensor = tensor.to(getattr(torch, dtype))
        tensors[name] = tensor.to("cpu").contiguous()
    save_file(tensors, str(tmp / "model.safetensors"))
    for name in _CONFIG_FILES:
        if (Path(base_dir) / name).is_file():
            shutil.copy(Path(base_dir) / name, tmp / name)
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    return folder


def prune_versions(root: Path, prefix: str, keep: int) -> None:
    """Delete all but the ``keep`` newest ``{prefix}{version}`` folders under ``root``."""
    found = []
    for path in root.glob(f"{prefix}*"):
        suffix = path.name[len(prefix) :]
        if path.is_dir() and suffix.isdigit():
            found.append((int(suffix), path))
    for _, path in sorted(found)[:-keep] if keep > 0 else sorted(found):
        shutil.rmtree(path, ignore_errors=True)
