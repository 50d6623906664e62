"""``TrainerHandle``: the one interface the launcher holds on the run's trainer.

Two classes implement it: :class:`~reinforge.trainer.trainer.Trainer` (one process:
planner and learner in the run's own process) and
:class:`~reinforge.trainer.parallel.ranked_trainer.RankedTrainer` (the planner in the
run's process, a learner on each of ``trainer.parallel.world_size`` rank processes).
The launcher (``launcher/run_trainer.py``, ``training_loop.py``) and the weight sync
(``weight_sync.py``) call only what is declared here, whichever it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import torch

from reinforge.core import Experience
from reinforge.trainer.step_result import StepResult
from reinforge.trainer.trainer_config import TrainerConfig


@runtime_checkable
class TrainerHandle(Protocol):
    """A trainer as the run drives it: steps, weights for the engines, checkpoints."""

    cfg: TrainerConfig
    #: optimiser steps taken; the model version counts the same steps (an engine that
    #: serves version ``v`` has the weights after ``v`` steps)
    global_step: int
    model_version: int

    @property
    def world_size(self) -> int:
        """Trainer ranks (1: in process)."""
        ...

    @property
    def is_lora(self) -> bool:
        """Whether the policy trains LoRA adapters (an engine may hot-load just those)."""
        ...

    @property
    def stopped(self) -> bool:
        """The trainer can take no more commands (ranks stopped mid-step, or closed)."""
        ...

    def train_step(
        self,
        experiences: Sequence[Experience],
        on_micro_batch: Callable[[int, int], None] | None = None,
        demonstrations: Sequence[Experience] | None = None,
    ) -> StepResult:
        """One optimiser step on ``experiences`` (see ``Trainer.train_step``)."""
        ...

    def weights_for_sync(self) -> dict[str, torch.Tensor]:
        """The policy's full weights (LoRA merged, base-model names), at once."""
        ...

    def weight_buckets(self, bucket_bytes: int) -> Iterator[dict[str, torch.Tensor]]:
        """The same weights in buckets of at most ``bucket_bytes`` (``weight_stream``)."""
        ...

    def shareable_weights(self) -> dict[str, torch.Tensor] | None:
        """The policy's own parameter tensors under base-model names, for an engine of
        this process to read in place; None where there are none to lend (LoRA, ranks)."""
        ...

    def save_adapter(self, folder: str | Path) -> None:
        """The LoRA adapter in peft's format, into ``folder``."""
        ...

    def save_checkpoint(self, folder: Path) -> dict[str, Any]:
        """Weights, optimiser and schedule into ``folder``; returns the state to record."""
        ...

    def load_checkpoint(self, folder: Path, state: dict[str, Any]) -> None:
        """Resume from ``save_checkpoint``'s folder and state (any number of ranks)."""
        ...

    def state_bytes(self) -> int | list[int]:
        """Bytes of trainable parameters, gradients and optimiser state: this process's
        (in process), or each rank's (on ranks)."""
        ...

    def close(self) -> None:
        """Release the trainer (stops its ranks); safe to call twice."""
        ...
