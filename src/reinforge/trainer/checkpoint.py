"""Checkpoints: trainer weights, optimiser, scheduler and run position, saved atomically.

A checkpoint is the folder ``RUN_DIR/checkpoints/step_N`` holding ``model/`` (a HF
model directory for a full fine-tune, a peft adapter for LoRA), ``optim.pt`` and
``state.json``. It is written to a hidden temporary folder and renamed into place,
so a crash mid-save leaves either the previous checkpoint set or the new one, never
half of one: a checkpoint of the same step is renamed aside, not deleted, until the
new one is in place, and put back if a save is killed in between. Leftover
temporary folders are deleted on the next save. Loading walks from the newest checkpoint back and skips any that
fails to load, with a warning.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch

logger = logging.getLogger(__name__)

T = TypeVar("T")
_NAME = re.compile(r"^step_(\d+)$")
STATE_FILE = "state.json"


class CheckpointManager:
    def __init__(self, root: str | Path, max_to_keep: int | None = None) -> None:
        self.root = Path(root)
        self.max_to_keep = max_to_keep

    def list(self) -> list[Path]:
        """Complete checkpoints, oldest first."""
        if not self.root.is_dir():
            return []
        self._recover()
        found = []
        for path in self.root.iterdir():
            match = _NAME.match(path.name)
            if match and (path / STATE_FILE).is_file():
                found.append((int(match.group(1)), path))
        return [p for _, p in sorted(found)]

    def save(self, step: int, write: Callable[[Path], dict[str, Any]]) -> Path:
        """Call ``write(folder)`` into a temporary folder, then publish it as ``step_N``.

        ``write`` returns the JSON state to record; it is written last.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        self._recover()
        for stale in self.root.glob(".tmp-step_*"):  # from a save that was killed
            shutil.rmtree(stale, ignore_errors=True)
        tmp = self.root / f".tmp-step_{step}-{os.getpid()}"
        tmp.mkdir()
        try:
            state = write(tmp)
            with open(tmp / STATE_FILE, "w", encoding="utf-8") as fh:
                json.dump({"step": step, **state}, fh, indent=2)
                fh.flush()
                os.fsync(fh.fileno())
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        target = self.root / f"step_{step}"
        old = self.root / f".old-step_{step}"
        if target.exists():
            # set the old copy aside (a rename) rather than deleting it first: a kill
            # between the two renames leaves it to _recover, never no checkpoint
            shutil.rmtree(old, ignore_errors=True)
            os.replace(target, old)
        os.replace(tmp, target)
        shutil.rmtree(old, ignore_errors=True)
        self._prune()
        return target

    def _recover(self) -> None:
        """Put back a checkpoint set aside by a save that was killed before replacing it."""
        for old in self.root.glob(".old-step_*"):
            target = self.root / old.name[len(".old-") :]
            if target.exists():
                shutil.rmtree(old, ignore_errors=True)
            else:
                logger.warning("restoring %s, left aside by an interrupted save", target)
                os.replace(old, target)

    def _prune(self) -> None:
        if not self.max_to_keep:
            return
        for old in self.list()[: -self.max_to_keep]:
            shutil.rmtree(old, ignore_errors=True)

    def load_latest(self, load: Callable[[Path, dict[str, Any]], T]) -> tuple[Path, T] | None:
        """Apply ``load(folder, state)`` to the newest checkpoint that loads; None if none does."""
        for path in reversed(self.list()):
            try:
                state = json.loads((path / STATE_FILE).read_text(encoding="utf-8"))
                return path, load(path, state)
            except Exception as exc:
                logger.warning(
                    "checkpoint %s is unusable (%s: %s); trying the previous one",
                    path,
                    type(exc).__name__,
                    exc,
                )
        return None


def read_state(path: Path) -> dict[str, Any]:
    return json.loads((path / STATE_FILE).read_text(encoding="utf-8"))


def _load_weights(model_dir: Path) -> dict[str, torch.Tensor]:
    """The tensors of a HF model directory saved with safetensors (single file or shards)."""
    from safetensors.torch import load_file

    index = model_dir / "model.safetensors.index.json"
    if not index.is_file():
        return load_file(model_dir / "model.safetensors")
    shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
    weights: dict[str, torch.Tensor] = {}
    for shard in shards:
        weights.update(load_file(model_dir / shard))
    return weights


def save_trainer(trainer: Any, folder: Path) -> dict[str, Any]:
    """Write the trainer's weights (or adapter), optimiser and scheduler into ``folder``."""
    trainer.model.save_pretrained(folder / "model", safe_serialization=True)
    torch.save(
        {"optimizer": trainer.optimizer.state_dict(), "scheduler": trainer.scheduler.state_dict()},
        folder / "optim.pt",
    )
    return {
        "global_step": trainer.global_step,
        "model_version": trainer.model_version,
        "lora": hasattr(trainer.model, "peft_config"),
    }


def load_trainer(trainer: Any, folder: Path, state: dict[str, Any]) -> None:
    """Restore what ``save_trainer`` wrote; raises if anything is missing or corrupt.

    Every file is read and checked before the trainer is touched, so a checkpoint
    that fails to load leaves the trainer as it was (and the caller can fall back to
    an older checkpoint, or start fresh, without half-restored weights).
    """
    from safetensors.torch import load_file

    if bool(state.get("lora")) != hasattr(trainer.model, "peft_config"):
        raise ValueError("checkpoint and config disagree on LoRA")
    global_step, model_version = int(state["global_step"]), int(state["model_version"])
    model_dir = folder / "model"
    if state.get("lora"):
        from peft import get_peft_model_state_dict

        weights = load_file(model_dir / "adapter_model.safetensors")
        own = get_peft_model_state_dict(trainer.model)
    else:
        weights = _load_weights(model_dir)
        own = trainer.model.state_dict()
    missing = [k for k in own if k not in weights and "lm_head" not in k]  # lm_head: tied
    unexpected = [k for k in weights if k not in own]
    wrong = [k for k, v in weights.items() if k in own and v.shape != own[k].shape]
    if missing or unexpected or wrong:
        raise ValueError(
            f"weights do not match the model (missing {missing[:3]}, unexpected "
            f"{unexpected[:3]}, wrong shape {wrong[:3]})"
        )
    optim = torch.load(folder / "optim.pt", weights_only=True)
    if not isinstance(optim, dict) or not {"optimizer", "scheduler"} <= set(optim):
        raise ValueError(f"{folder / 'optim.pt'} holds no optimizer and scheduler state")
    # everything read: now apply (the optimiser first: it validates the param groups)
    saved_optimizer = trainer.optimizer.state_dict()
    trainer.optimizer.load_state_dict(optim["optimizer"])
    try:
        if state.get("lora"):
            from peft import set_peft_model_state_dict

            set_peft_model_state_dict(trainer.model, weights)
        else:
            trainer.model.load_state_dict(weights, strict=False)
    except Exception:
        trainer.optimizer.load_state_dict(saved_optimizer)
        raise
    trainer.scheduler.load_state_dict(optim["scheduler"])
    trainer.global_step = global_step
    trainer.model_version = model_version


def policy_weights(folder: Path, base_model_path: str | Path) -> dict[str, torch.Tensor]:
    """The weights an inference engine needs to act as the policy saved in ``folder``."""
    state = read_state(folder)
    if not state.get("lora"):
        return _load_weights(folder / "model")
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from reinforge.trainer.policy_model import merged_state_dict

    base = AutoModelForCausalLM.from_pretrained(base_model_path, local_files_only=True)
    return merged_state_dict(PeftModel.from_pretrained(base, folder / "model"))


def export_model(folder: Path, base_model_path: str | Path, out_dir: str | Path) -> Path:
    """Write a plain HF model directory (weights merged, tokenizer included) for a checkpoint."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = Path(out_dir)
    model = AutoModelForCausalLM.from_pretrained(base_model_path, local_files_only=True)
    weights = policy_weights(folder, base_model_path)
    _, unexpected = model.load_state_dict(weights, strict=False)
    if unexpected:
        raise ValueError(f"checkpoint {folder} has weights the base model lacks: {unexpected[:3]}")
    model.save_pretrained(out, safe_serialization=True)
    AutoTokenizer.from_pretrained(base_model_path, local_files_only=True).save_pretrained(out)
    return out
