"""Golden runs: what two runs of one seeded config must share, bit for bit.

A CPU run on the ``hf`` engine with ``seed:`` set repeats exactly (docs/verification.md
says which settings it takes). What "exactly" means is made checkable here: the
trained steps' metrics without the wall-clock ones (``golden_metrics``) and a hash of
the final weights (``final_weights_sha256``), so a run on other hardware can be
compared with the curve and hash docs/training.md records.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import torch

#: metric names with any of these parts measure the machine, not the run
_CLOCK_PARTS = ("time", "per_min", "per_s", "seconds", "memory", "rss", "_mb", "_gib", "bytes")


def weights_sha256(state_dict: dict[str, torch.Tensor]) -> str:
    """SHA-256 over every tensor's name, dtype, shape and bytes, in name order."""
    digest = hashlib.sha256()
    for name in sorted(state_dict):
        tensor = state_dict[name].detach().to("cpu").contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        digest.update(tensor.view(torch.uint8).numpy().tobytes() if tensor.numel() else b"")
    return digest.hexdigest()


def _checkpoint(run_dir: Path, step: int | None) -> Path:
    folders = [p for p in (run_dir / "checkpoints").glob("step_*") if p.is_dir()]
    if step is not None:
        folders = [p for p in folders if p.name == f"step_{step}"]
    if not folders:
        raise FileNotFoundError(f"no checkpoint{'' if step is None else f' step_{step}'} in "
                                f"{run_dir / 'checkpoints'}")  # fmt: skip
    return max(folders, key=lambda p: int(p.name.rsplit("_", 1)[1]))


def final_weights_sha256(run_dir: str | Path, step: int | None = None) -> str:
    """``weights_sha256`` of the policy a run ended with (its newest checkpoint, or
    ``checkpoints/step_{step}``), LoRA merged as an engine would load it."""
    from reinforge.models.catalog import resolve_model_path
    from reinforge.trainer.checkpoint import policy_weights

    run_dir = Path(run_dir)
    config = json.loads((run_dir / "config.json").read_text())
    base = resolve_model_path(config["model"]["model_path"])
    return weights_sha256(policy_weights(_checkpoint(run_dir, step), base))


def golden_metrics(run_dir: str | Path) -> list[dict[str, Any]]:
    """The step rows of ``metrics.jsonl`` (explored and trained) without the wall-clock
    metrics."""
    rows = []
    for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        if "step" in row:
            rows.append({k: v for k, v in row.items() if not any(p in k for p in _CLOCK_PARTS)})
    return rows
