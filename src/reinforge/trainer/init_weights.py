"""Starting a run from another run's weights (``model.init_from``), e.g. RL after SFT.

The base model (``model.model_path``) still supplies the architecture and the
tokenizer; ``init_from`` supplies the weights that the policy, the reference model
(if any) and the engine start from. Only weights are taken: the optimiser, the
schedule and the step count start fresh, since the new run trains another objective.
"""

from __future__ import annotations

from pathlib import Path

import torch

from reinforge.trainer.checkpoint import (
    STATE_FILE,
    CheckpointManager,
    load_weights,
    policy_weights,
)
from reinforge.trainer.weights_into import apply_init_weights, load_into

__all__ = ["apply_init_weights", "init_weights", "load_into", "resolve_init_from"]


def resolve_init_from(path: str | Path) -> Path:
    """The folder whose weights ``path`` names: a checkpoint (``step_N``), the newest
    checkpoint of a run directory, or a plain HF model directory (``reinforge export``)."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(f"model.init_from: {folder} is not a directory")
    if (folder / STATE_FILE).is_file():
        return folder
    checkpoints = CheckpointManager(folder / "checkpoints").list()
    if checkpoints:
        return checkpoints[-1]
    if (folder / "model.safetensors").is_file() or (
        folder / "model.safetensors.index.json"
    ).is_file():
        return folder
    raise FileNotFoundError(
        f"model.init_from: {folder} holds no checkpoint (state.json), no run directory "
        "with checkpoints/step_N, and no HF model (model.safetensors)"
    )


def init_weights(path: str | Path, base_model_path: str | Path) -> dict[str, torch.Tensor]:
    """The full (LoRA merged) policy weights that ``model.init_from: path`` names."""
    folder = resolve_init_from(path)
    if (folder / STATE_FILE).is_file():
        return policy_weights(folder, base_model_path)
    return load_weights(folder)
