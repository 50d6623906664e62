"""Which device the trainer's tensors live on (``trainer.device``)."""

from __future__ import annotations

import torch


def resolve_device(setting: str, rank: int = 0) -> str:
    """``auto``: CUDA when a GPU is visible, else the CPU. On CUDA, rank ``r`` of several
    uses the GPU ``r`` places after the configured one (``cuda`` is ``cuda:0``).

    Raises ``ValueError`` for CUDA on a machine without a visible GPU, or a GPU index
    beyond the visible ones, instead of failing later inside a forward pass.
    """
    if setting == "auto":
        setting = "cuda" if torch.cuda.is_available() else "cpu"
    if setting == "cpu":
        return "cpu"
    device = torch.device(setting)
    if device.type != "cuda":
        raise ValueError(f"trainer.device: {setting!r} is not auto, cpu, cuda or cuda:N")
    if not torch.cuda.is_available():
        raise ValueError(
            f"trainer.device: {setting} asks for a GPU, but torch sees none (a CPU build "
            "of torch, or CUDA_VISIBLE_DEVICES hides them); use cpu or auto"
        )
    index = (device.index or 0) + rank
    visible = torch.cuda.device_count()
    if index >= visible:
        raise ValueError(
            f"trainer.device: rank {rank} needs GPU cuda:{index}, but {visible} are visible"
        )
    return f"cuda:{index}"
