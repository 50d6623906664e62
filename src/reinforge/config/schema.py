"""The YAML schema, validated with pydantic. Unknown keys are errors.

Each layer owns its own section (``ModelConfig`` in models, ``BufferConfig`` in
buffer, ``ExplorerConfig`` in explorer); this module composes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from reinforge.buffer.buffer_config import BufferConfig
from reinforge.explorer.cluster_config import ClusterConfig
from reinforge.explorer.explorer_config import ExplorerConfig
from reinforge.models.model_config import ModelConfig
from reinforge.trainer.trainer_config import TrainerConfig


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class SynchronizerConfig(_Strict):
    """When and how new weights reach the inference engine."""

    sync_method: Literal["in_process", "checkpoint"] = Field(
        "in_process",
        description="in_process (mode both) or checkpoint (separate explore/train processes)",
    )
    sync_interval: int = Field(1, ge=1, description="sync after every N training steps")
    sync_offset: int = Field(
        0, ge=0, description="explorer runs this many steps ahead of the trainer"
    )


class CheckpointConfig(_Strict):
    save_interval: int | None = Field(
        None, ge=1, description="save every N training steps (and at the end)"
    )
    max_checkpoints_to_keep: int | None = Field(2, ge=1)


class WandbConfig(_Strict):
    enabled: bool = False
    project: str | None = None
    entity: str | None = None
    mode: Literal["online", "offline"] = "offline"


class MlflowConfig(_Strict):
    enabled: bool = False
    tracking_uri: str | None = Field(
        None, description="default: RUN_DIR/mlruns (a local file store)"
    )
    experiment: str | None = None


class MonitorConfig(_Strict):
    progress: bool = True
    jsonl: bool = True
    tensorboard: bool = True
    plot: bool = Field(True, description="write PNG curves at the end of a run")
    wandb: WandbConfig = Field(default_factory=WandbConfig)
    mlflow: MlflowConfig = Field(default_factory=MlflowConfig)


class ReinforgeConfig(_Strict):
    """A whole run."""

    project: str = "reinforge"
    name: str = "run"
    run_dir: str | None = Field(None, description="default: runs/PROJECT/NAME")
    mode: Literal["both", "explore", "train", "bench", "eval"] = Field(
        "both",
        description="both: explore+train in one process; explore/train: two processes sharing a buffer",
    )
    seed: int | None = Field(
        None,
        description="one seed from which every other seed derives (engine sampling, mock "
        "policy, trainer, taskset shuffling) unless a section sets its own",
    )
    model: ModelConfig = Field(default_factory=ModelConfig)
    buffer: BufferConfig = Field(default_factory=BufferConfig)
    explorer: ExplorerConfig = Field(default_factory=ExplorerConfig)
    trainer: TrainerConfig = Field(default_factory=TrainerConfig)
    synchronizer: SynchronizerConfig = Field(default_factory=SynchronizerConfig)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
    monitor: MonitorConfig = Field(default_factory=MonitorConfig)
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    plugins: list[str] = Field(
        default_factory=list,
        description="Python files or folders (relative to this file) imported before the "
        "run, so the workflows, rewards and operators they register can be named here",
    )
    # where the YAML file lives: relative taskset paths resolve against it
    config_dir: str | None = Field(None, exclude=True)
    # dotted paths of values read from the environment (masked in what a run writes)
    secret_paths: list[str] = Field(default_factory=list, exclude=True)

    @model_validator(mode="after")
    def _derive_seeds(self) -> ReinforgeConfig:
        """Spread the top-level ``seed`` to every seed nobody set explicitly."""
        if self.seed is None:
            return self
        seed = self.seed

        def put(section: BaseModel, value: int) -> None:
            if "seed" not in section.model_fields_set:
                section.seed = value

        put(self.model.hf, seed)
        put(self.model.mock, seed)
        put(self.trainer, seed)
        inputs = self.buffer.explorer_input
        for taskset in [inputs.taskset, *inputs.eval_tasksets]:
            if taskset is not None:
                put(taskset, seed)
        for i, aux in enumerate(self.explorer.auxiliary_models, 1):
            put(aux.hf, seed + i)
            put(aux.mock, seed + i)
        return self

    def public_dump(self) -> dict[str, Any]:
        """The config as plain data with secrets masked (for config.json, W&B, MLflow)."""
        from reinforge.config.secrets import masked

        return masked(self.model_dump(mode="json"), set(self.secret_paths))

    @property
    def resolved_run_dir(self) -> Path:
        return Path(self.run_dir) if self.run_dir else Path("runs") / self.project / self.name

    @property
    def checkpoint_dir(self) -> Path:
        return self.resolved_run_dir / "checkpoints"

    @property
    def storage_path(self) -> Path:
        return (
            Path(self.buffer.storage.path)
            if self.buffer.storage.path
            else self.resolved_run_dir / "buffer.db"
        )
