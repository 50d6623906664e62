"""Getting the trainer's weights into the inference engines.

``in_process``: the engine lives in this process; the trainer hands it the
(merged) weights directly, in bounded buckets (``weight_stream``; the whole state
dict with ``synchronizer.weight_transport: whole``), and a ``WeightCheck`` then asks
every replica whether it serves them (``sync_check``). ``checkpoint``: explorer and
trainer are separate processes sharing a run directory; the explorer loads the newest
checkpoint the trainer has published.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reinforge.trainer.checkpoint import CheckpointManager, policy_weights, read_state
from reinforge.trainer.handle import TrainerHandle
from reinforge.trainer.sync_check import WeightCheck
from reinforge.trainer.weight_stream import DEFAULT_BUCKET_BYTES

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WeightTransport:
    """How an in-process sync moves the weights (``synchronizer.weight_transport``,
    ``synchronizer.bucket_mb``): ``buckets`` streams them (``weight_stream``), ``whole``
    hands the engine the whole state dict at once (the fallback)."""

    method: str = "buckets"
    bucket_bytes: int = DEFAULT_BUCKET_BYTES

    @classmethod
    def from_config(cls, sync: Any) -> WeightTransport:
        return cls(sync.weight_transport, int(sync.bucket_mb) * 2**20)


def sync_in_process(
    trainer: TrainerHandle,
    engine: Any,
    check: WeightCheck | None = None,
    transport: WeightTransport = WeightTransport(),
    share: bool = False,
) -> int:
    """Push the trainer's current weights into ``engine``; returns the new model version.

    ``share``: the engine samples only between steps and is synced after each, so an
    engine that can (the hf engine in the trainer's dtype) reads the trainer's own
    tensors instead of a copy (``weight_share``); elsewhere the weights are copied.

    A LoRA trainer hands an engine that hot-loads adapters (vLLM started with
    ``max_lora_rank``) just its adapter folder; every other pair gets the merged weights,
    streamed in buckets (``transport``) or whole. With ``check``, every replica of the
    engine then scores the probe and a replica that does not serve the trainer's weights
    raises ``WeightCheckError`` (``sync_check``).
    """
    pending = check.start(trainer, engine) if check is not None else None
    if getattr(engine, "lora_enabled", False) and trainer.is_lora:
        with tempfile.TemporaryDirectory(prefix="reinforge-adapter-") as folder:
            trainer.save_adapter(folder)
            engine.update_lora_adapter(folder, version=trainer.model_version)
    elif share and _shared(trainer, engine):
        pass  # the engine reads the trainer's tensors: nothing to move
    elif transport.method == "buckets":
        buckets = trainer.weight_buckets(transport.bucket_bytes)
        engine.receive_weights(buckets, version=trainer.model_version)
    else:
        engine.update_weights(trainer.weights_for_sync(), version=trainer.model_version)
    if check is not None:
        check.verify(trainer, engine, pending)
    return trainer.model_version


def _shared(trainer: TrainerHandle, engine: Any) -> bool:
    """Have ``engine`` read the trainer's tensors; False (nothing changed) where either
    side cannot, e.g. a bf16 engine beside fp32 master weights."""
    if not getattr(engine, "share_weights_with_trainer", False):
        return False
    tensors = trainer.shareable_weights()
    dtype = getattr(engine, "weights_dtype", None)
    if tensors is None or any(t.dtype != dtype for t in tensors.values() if t.is_floating_point()):
        return False
    why = engine.share_weights(tensors, version=trainer.model_version)
    if why is not None:
        logger.debug("engine keeps a copy of the weights: %s", why)
    return why is None


class CheckpointWeightSource:
    """Polls a checkpoint folder and loads newer policies into an engine."""

    def __init__(self, checkpoints: CheckpointManager, base_model_path: str | Path) -> None:
        self.checkpoints = checkpoints
        self.base_model_path = base_model_path
        self.loaded_version = -1

    def maybe_update(self, engine: Any) -> bool:
        """Load the newest checkpoint if it is newer than what the engine has."""
        for folder in reversed(self.checkpoints.list()):
            try:
                version = int(read_state(folder)["model_version"])
                if version <= max(self.loaded_version, engine.model_version):
                    return False
                engine.update_weights(policy_weights(folder, self.base_model_path), version=version)
            except Exception as exc:
                logger.warning(
                    "cannot load weights from %s (%s); trying the previous checkpoint", folder, exc
                )
                continue
            self.loaded_version = version
            return True
        return False
