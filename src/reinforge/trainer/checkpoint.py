"""Checkpoints: trainer weights, optimiser, scheduler and run position, saved atomically.

A checkpoint is the folder ``RUN_DIR/checkpoints/step_N`` holding ``model/`` (a HF
model directory for a full fine-tune, a peft adapter for LoRA), the optimizer and
scheduler (``optim.pt`` from one process; ``optim/``, a ``torch.distributed.checkpoint``
of the sharded optimizer state, and ``scheduler.pt`` from several ranks: either loads
on any number of ranks) and ``state.json`` (written last: a ``step_N`` folder holding
it is complete). Every
change to the set is a rename, so a kill at any point leaves every listed
checkpoint complete and the newest one loadable:

- a save writes into a hidden ``.tmp-step_N-PID`` folder and renames it into place;
- a checkpoint of the same step is first renamed aside to ``.old-step_N`` (not
  deleted), and put back by the next writer if the save was killed in between;
- pruning renames a checkpoint to ``.del-step_N-PID`` before deleting its files.

Only the process that saves (the trainer) tidies the folder: :meth:`CheckpointManager.save`
and :meth:`CheckpointManager.load_latest` (called once when the trainer starts) put back
set-aside checkpoints and delete the leftovers of killed saves. :meth:`CheckpointManager.list`
only reads, so an explorer polling for new weights never races the trainer.
Loading walks from the newest checkpoint back and skips any that fails to load,
with a warning for each and one saying which older checkpoint is used instead.
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
_TMP, _OLD, _DEL = ".tmp-step_", ".old-step_", ".del-step_"
#: the optimizer and scheduler of a one-process trainer
OPTIM_FILE = "optim.pt"
#: the optimizer state of several ranks (torch.distributed.checkpoint), and their scheduler
OPTIM_DIR = "optim"
SCHEDULER_FILE = "scheduler.pt"
#: a Ray trainer rank's staging folder on its own node (``trainer.parallel.ray_ranks``):
#: it writes and reads checkpoints there, and the driver moves the files
STAGING_ENV = "REINFORGE_RANK_STAGING"


def _fsync_dir(folder: Path) -> None:
    """Make the renames in ``folder`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class CheckpointManager:
    def __init__(self, root: str | Path, max_to_keep: int | None = None) -> None:
        self.root = Path(root)
        self.max_to_keep = max_to_keep

    def list(self) -> list[Path]:
        """Complete checkpoints, oldest first. Reads only (safe beside a saving trainer)."""
        if not self.root.is_dir():
            return []
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
        self.recover()
        tmp = self.root / f"{_TMP}{step}-{os.getpid()}"
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
        old = self.root / f"{_OLD}{step}"
        if target.exists():
            # set the old copy aside (a rename) rather than deleting it first: a kill
            # between the two renames leaves it to recover(), never no checkpoint
            shutil.rmtree(old, ignore_errors=True)
            os.replace(target, old)
        os.replace(tmp, target)
        _fsync_dir(self.root)
        shutil.rmtree(old, ignore_errors=True)
        self._prune()
        return target

    def recover(self) -> None:
        """Undo what killed saves left: put back set-aside checkpoints, delete leftovers.

        Only for the process that saves: a reader calling this could put a checkpoint
        back while a save is between its renames.
        """
        if not self.root.is_dir():
            return
        for path in sorted(self.root.iterdir()):
            if path.name.startswith(_OLD):
                target = self.root / f"step_{path.name[len(_OLD) :]}"
                if (target / STATE_FILE).is_file():
                    shutil.rmtree(path, ignore_errors=True)
                elif (path / STATE_FILE).is_file():
                    logger.warning("restoring %s, left aside by an interrupted save", target)
                    if target.exists():  # an incomplete copy: the set-aside one is whole
                        shutil.rmtree(target)
                    os.replace(path, target)
                else:
                    shutil.rmtree(path, ignore_errors=True)
            elif path.name.startswith((_TMP, _DEL)):
                logger.info("deleting %s, left by an interrupted save or prune", path)
                shutil.rmtree(path, ignore_errors=True)
        _fsync_dir(self.root)

    def _prune(self) -> None:
        """Delete all but the newest ``max_to_keep`` checkpoints, each renamed away first."""
        if not self.max_to_keep:
            return
        for old in self.list()[: -self.max_to_keep]:
            doomed = self.root / f"{_DEL}{old.name[len('step_') :]}-{os.getpid()}"
            os.replace(old, doomed)
            shutil.rmtree(doomed, ignore_errors=True)

    def load_latest(self, load: Callable[[Path, dict[str, Any]], T]) -> tuple[Path, T] | None:
        """Apply ``load(folder, state)`` to the newest checkpoint that loads; None if none does.

        For the trainer when it starts: it first puts back what killed saves left
        (:meth:`recover`). Each checkpoint that fails to load is logged as a warning,
        and so is falling back to an older one than the newest.
        """
        self.recover()
        unusable: list[str] = []
        for path in reversed(self.list()):
            try:
                state = json.loads((path / STATE_FILE).read_text(encoding="utf-8"))
                loaded = load(path, state)
            except Exception as exc:
                unusable.append(path.name)
                logger.warning(
                    "checkpoint %s is unusable (%s: %s); trying the previous one",
                    path,
                    type(exc).__name__,
                    exc,
                )
                continue
            if unusable:
                logger.warning(
                    "resuming from %s, an older checkpoint than %s, which could not be loaded",
                    path,
                    ", ".join(unusable),
                )
            return path, loaded
        return None


def read_state(path: Path) -> dict[str, Any]:
    return json.loads((path / STATE_FILE).read_text(encoding="utf-8"))


def load_weights(model_dir: Path) -> dict[str, torch.Tensor]:
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


def rank_folder(folder: Path, create: bool = False) -> Path:
    """Where this process reads or writes the checkpoint ``folder``: the folder itself,
    or a Ray rank's copy of it in the staging folder on its node (nodes share no
    filesystem; the driver moves the files between the two)."""
    staging = os.environ.get(STAGING_ENV)
    if not staging:
        return folder
    local = Path(staging) / folder.name
    if create:
        local.mkdir(parents=True, exist_ok=True)
    return local


def save_policy(trainer: Any, folder: Path) -> None:
    """The policy as a HF model directory (a full fine-tune) or a peft adapter folder
    (LoRA). Several ranks: a sharded model is gathered first (every rank calls this),
    and rank 0 writes (a Ray rank into its staging folder, see :func:`rank_folder`)."""
    _save_policy(trainer, rank_folder(folder, create=True))


def _save_policy(trainer: Any, folder: Path) -> None:
    from reinforge.trainer.sharding.strategy import full_state_dict, is_sharded

    full = None
    if is_sharded(trainer.model) and hasattr(trainer.model, "peft_config"):
        # an adapter folder holds the adapter only: gather just its tensors
        from reinforge.trainer.weight_stream import lora_adapter_buckets

        full = {}
        for bucket in lora_adapter_buckets(trainer.model, keep=trainer.rank.is_main):
            full.update(bucket)
    elif is_sharded(trainer.model):
        full = full_state_dict(trainer.model)
    if not trainer.rank.is_main:
        return
    extra = {} if full is None else {"state_dict": full}
    trainer.model.save_pretrained(folder, safe_serialization=True, **extra)


def save_trainer(trainer: Any, folder: Path) -> dict[str, Any]:
    """Write the trainer's weights (or adapter), optimiser and scheduler into ``folder``.

    In one process the optimizer and scheduler go into ``optim.pt``. Several ranks write
    the optimizer state with ``torch.distributed.checkpoint`` (``optim/``, each rank its
    shard), which loads on any number of ranks, and the scheduler into ``scheduler.pt``.
    A Ray rank writes into its staging folder instead (:func:`rank_folder`).
    """
    folder = rank_folder(folder, create=True)
    _save_policy(trainer, folder / "model")
    if trainer.rank.distributed:
        from reinforge.trainer.sharding.sharded_optimizer import save_optimizer

        save_optimizer(trainer.model, trainer.optimizer, folder / OPTIM_DIR)
        if trainer.rank.is_main:
            torch.save({"scheduler": trainer.scheduler.state_dict()}, folder / SCHEDULER_FILE)
    else:
        torch.save(
            {
                "optimizer": trainer.optimizer.state_dict(),
                "scheduler": trainer.scheduler.state_dict(),
            },
            folder / OPTIM_FILE,
        )
    return {
        "global_step": trainer.global_step,
        "model_version": trainer.model_version,
        "lora": hasattr(trainer.model, "peft_config"),
        "world_size": trainer.rank.world_size,
    }


def _read_optimizer(folder: Path) -> tuple[Any, dict[str, Any]]:
    """(the optimizer's saved state, the scheduler's): ``optim.pt``'s full state dict, or
    the folder of a sharded one (loaded later, by the ranks that need it)."""
    if (folder / OPTIM_DIR).is_dir():
        scheduler = torch.load(folder / SCHEDULER_FILE, weights_only=True, map_location="cpu")
        if not isinstance(scheduler, dict) or "scheduler" not in scheduler:
            raise ValueError(f"{folder / SCHEDULER_FILE} holds no scheduler state")
        return folder / OPTIM_DIR, scheduler["scheduler"]
    optim = torch.load(folder / OPTIM_FILE, weights_only=True, map_location="cpu")
    if not isinstance(optim, dict) or not {"optimizer", "scheduler"} <= set(optim):
        raise ValueError(f"{folder / OPTIM_FILE} holds no optimizer and scheduler state")
    return optim["optimizer"], optim["scheduler"]


def load_trainer(trainer: Any, folder: Path, state: dict[str, Any]) -> None:
    """Restore what ``save_trainer`` wrote, on any number of ranks; raises if anything is
    missing or corrupt.

    Every file is read and checked before the trainer is touched, so a checkpoint
    that fails to load leaves the trainer as it was (and the caller can fall back to
    an older checkpoint, or start fresh, without half-restored weights).
    """
    from reinforge.trainer.sharding.sharded_optimizer import load_optimizer

    if bool(state.get("lora")) != hasattr(trainer.model, "peft_config"):
        raise ValueError("checkpoint and config disagree on LoRA")
    folder = rank_folder(folder)
    global_step, model_version = int(state["global_step"]), int(state["model_version"])
    model_dir = folder / "model"
    weights, own = _saved_and_own_weights(trainer.model, model_dir, bool(state.get("lora")))
    missing = [k for k in own if k not in weights and "lm_head" not in k]  # lm_head: tied
    unexpected = [k for k in weights if k not in own]
    wrong = [k for k, v in weights.items() if k in own and v.shape != own[k].shape]
    if missing or unexpected or wrong:
        raise ValueError(
            f"weights do not match the model (missing {missing[:3]}, unexpected "
            f"{unexpected[:3]}, wrong shape {wrong[:3]})"
        )
    optimizer_state, scheduler_state = _read_optimizer(folder)
    # everything read: now apply (the optimiser first: it validates the param groups)
    saved_optimizer = trainer.optimizer.state_dict()
    load_optimizer(trainer.model, trainer.optimizer, optimizer_state, trainer.rank.distributed)
    try:
        _apply_weights(trainer.model, weights, bool(state.get("lora")))
    except Exception:
        trainer.optimizer.load_state_dict(saved_optimizer)
        raise
    trainer.scheduler.load_state_dict(scheduler_state)
    trainer.global_step = global_step
    trainer.model_version = model_version


def _saved_and_own_weights(
    model: Any, model_dir: Path, lora: bool
) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """The checkpoint's tensors and the model's own entries under the same names."""
    from safetensors.torch import load_file

    if lora:
        from peft import get_peft_model_state_dict

        return load_file(model_dir / "adapter_model.safetensors"), get_peft_model_state_dict(model)
    return load_weights(model_dir), model.state_dict()


def _apply_weights(model: Any, weights: dict[str, torch.Tensor], lora: bool) -> None:
    """Copy full checkpoint tensors into ``model`` (sharding them where it is sharded)."""
    from reinforge.trainer.sharding.strategy import is_sharded, load_full_state_dict

    if not lora:
        load_full_state_dict(model, weights)
        return
    if not is_sharded(model):
        from peft import set_peft_model_state_dict

        set_peft_model_state_dict(model, weights)
        return
    adapter = model.active_adapter
    renamed = {}
    for key, value in weights.items():
        for part in ("lora_A", "lora_B", "lora_embedding_A", "lora_embedding_B"):
            key = key.replace(f".{part}.", f".{part}.{adapter}.")
        renamed[key] = value
    load_full_state_dict(model, renamed)


def policy_weights(folder: Path, base_model_path: str | Path) -> dict[str, torch.Tensor]:
    """The weights an inference engine needs to act as the policy saved in ``folder``."""
    state = read_state(folder)
    if not state.get("lora"):
        return load_weights(folder / "model")
    from peft import PeftModel

    from reinforge.models.vision.loading import model_class
    from reinforge.trainer.policy_model import merged_state_dict

    base = model_class(base_model_path).from_pretrained(base_model_path, local_files_only=True)
    return merged_state_dict(PeftModel.from_pretrained(base, folder / "model"))


def export_adapter(folder: Path, base_model_path: str | Path, out_dir: str | Path) -> Path:
    """Copy a LoRA checkpoint's adapter (peft format) and the tokenizer to ``out_dir``."""
    import shutil

    from transformers import AutoTokenizer

    if not read_state(folder).get("lora"):
        raise ValueError(
            f"checkpoint {folder} is a full fine-tune: there is no adapter to export "
            "(export the whole model instead)"
        )
    out = Path(out_dir)
    shutil.copytree(folder / "model", out, dirs_exist_ok=True)
    AutoTokenizer.from_pretrained(base_model_path, local_files_only=True).save_pretrained(out)
    return out


def export_model(folder: Path, base_model_path: str | Path, out_dir: str | Path) -> Path:
    """Write a plain HF model directory (weights merged, tokenizer included) for a checkpoint;
    a vision-language model's processor goes with it."""
    from transformers import AutoTokenizer

    from reinforge.models.vision.loading import is_vision_language, model_class

    out = Path(out_dir)
    model = model_class(base_model_path).from_pretrained(base_model_path, local_files_only=True)
    weights = policy_weights(folder, base_model_path)
    _, unexpected = model.load_state_dict(weights, strict=False)
    if unexpected:
        raise ValueError(f"checkpoint {folder} has weights the base model lacks: {unexpected[:3]}")
    model.save_pretrained(out, safe_serialization=True)
    if is_vision_language(base_model_path):
        from transformers import AutoProcessor

        AutoProcessor.from_pretrained(base_model_path, local_files_only=True).save_pretrained(out)
    else:
        AutoTokenizer.from_pretrained(base_model_path, local_files_only=True).save_pretrained(out)
    return out
