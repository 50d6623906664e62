"""The YAML schema, validated with pydantic. Unknown keys are errors.

Each layer owns its own section (``ModelConfig`` in models, ``BufferConfig`` in
buffer, ``ExplorerConfig`` in explorer); this module composes them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, Field, model_validator

from reinforge.buffer.buffer_config import BufferConfig
from reinforge.core.strict_model import StrictModel
from reinforge.explorer.cluster_config import ClusterConfig
from reinforge.explorer.explorer_config import ExplorerConfig
from reinforge.models.model_config import ModelConfig
from reinforge.trainer.trainer_config import TrainerConfig


class SynchronizerConfig(StrictModel):
    """When and how new weights reach the inference engine."""

    sync_method: Literal["in_process", "checkpoint"] = Field(
        "in_process",
        description="in_process (mode both) or checkpoint (separate explore/train processes)",
    )
    sync_interval: int = Field(1, ge=1, description="sync after every N training steps")
    weight_transport: Literal["buckets", "whole"] = Field(
        "buckets",
        description="in_process: how weights reach the engine. buckets: gathered from the "
        "trainer's shards and loaded bucket by bucket (hf in place, vLLM over HTTP into its "
        "workers; no files); whole: today's fallback, the whole state dict at once (vLLM "
        "writes it to work_dir/weights/v{N} and reloads it)",
    )
    bucket_mb: int = Field(
        256, ge=1, description="weight_transport buckets: the most MiB of weights in one bucket"
    )
    sync_offset: int = Field(
        0, ge=0, description="explorer runs this many steps ahead of the trainer"
    )
    overlap: bool = Field(
        False,
        description="mode both: train step k in a worker thread (or on the trainer's ranks) "
        "while the explorer samples step k + sync_offset, then sync; needs sync_offset >= 1 "
        "(the rollouts of the step being sampled come from weights sync_offset steps old)",
    )
    verify_weights: bool = Field(
        True,
        description="after each in-process sync, every engine replica scores a fixed probe "
        "and a log-prob gap to the trainer's beyond the tolerance fails the step "
        "(docs/verification.md); metric sync/verify_time",
    )
    verify_tolerance: float | None = Field(
        None,
        gt=0,
        description="largest per-token log-prob gap the weight check accepts; null: "
        "calibrated per engine and dtype (docs/verification.md)",
    )

    @model_validator(mode="after")
    def _overlap_needs_an_offset(self) -> SynchronizerConfig:
        if self.overlap and self.sync_offset < 1:
            raise ValueError(
                "synchronizer.overlap trains a step while the next is sampled, so the "
                "explorer must run ahead of the trainer: set sync_offset: 1 (or more)"
            )
        return self


class CheckpointConfig(StrictModel):
    save_interval: int | None = Field(
        10,
        ge=1,
        description="save every N training steps (and at the end); a run killed without "
        "warning resumes from the last one. null: only at the end and on Ctrl-C/SIGTERM",
    )
    max_checkpoints_to_keep: int | None = Field(2, ge=1)


class WandbConfig(StrictModel):
    enabled: bool = False
    project: str | None = None
    entity: str | None = None
    mode: Literal["online", "offline"] = "offline"


class MlflowConfig(StrictModel):
    enabled: bool = False
    tracking_uri: str | None = Field(
        None, description="default: RUN_DIR/mlruns (a local file store)"
    )
    experiment: str | None = None


class MonitorConfig(StrictModel):
    progress: bool = True
    jsonl: bool = True
    tensorboard: bool = True
    plot: bool = Field(True, description="write PNG curves at the end of a run")
    wandb: WandbConfig = Field(default_factory=WandbConfig)
    mlflow: MlflowConfig = Field(default_factory=MlflowConfig)


class ReinforgeConfig(StrictModel):
    """A whole run."""

    project: str = "reinforge"
    name: str = "run"
    run_dir: str | None = Field(None, description="default: runs/PROJECT/NAME")
    mode: Literal["both", "explore", "train", "bench", "eval", "sft"] = Field(
        "both",
        description="both: explore+train in one process; explore/train: two processes sharing "
        "a buffer; sft: supervised fine-tuning on buffer.trainer_input.experience_buffer",
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
    def _sft_algorithm(self) -> ReinforgeConfig:
        """``mode: sft`` trains the ``sft`` loss: the default algorithm becomes ``sft``,
        and another one named explicitly is an error rather than silently replaced."""
        if self.mode != "sft":
            return self
        if "algorithm" not in self.trainer.model_fields_set:
            self.trainer.algorithm = "sft"
        elif self.trainer.algorithm != "sft":
            raise ValueError(
                f"mode 'sft' trains with trainer.algorithm: sft, not '{self.trainer.algorithm}'"
            )
        return self

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
        # the SFT rows' shuffle: mode sft's dataset and the demonstrations mixed into RL
        for dataset in (self.buffer.trainer_input.experience_buffer, self.trainer.sft_aux):
            if dataset is not None:
                put(dataset, seed)
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


# ---- helpers for error messages and editors -------------------------------------------

# fields the loader fills in; a YAML file never sets them
_INTERNAL_FIELDS = ("config_dir", "secret_paths")


def _candidates(annotation: Any) -> list[Any]:
    """The types a value of ``annotation`` may have (Optional, unions and Annotated unwrapped)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _candidates(get_args(annotation)[0])
    if origin in (Union, UnionType):
        return [t for arg in get_args(annotation) for t in _candidates(arg)]
    return [annotation]


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _field_named(model: type[BaseModel], key: str) -> Any:
    """The field of ``model`` called ``key`` (by name or alias), or None."""
    for name, info in model.model_fields.items():
        if key in (name, info.alias):
            return info
    return None


def _inside(tp: Any, part: str | int) -> list[Any]:
    """The types found one step (a key or a list index) inside a value of type ``tp``."""
    if _is_model(tp):
        info = _field_named(tp, str(part)) if isinstance(part, str) else None
        return _candidates(info.annotation) if info is not None else []
    origin, args = get_origin(tp), get_args(tp)
    if origin in (list, tuple, set, frozenset, Sequence) and isinstance(part, int) and args:
        return _candidates(args[0])
    if origin in (dict, Mapping) and isinstance(part, str) and len(args) == 2:
        return _candidates(args[1])
    return []


def known_keys(loc: Sequence[str | int], root: type[BaseModel] | None = None) -> list[str] | None:
    """The keys the schema accepts in the mapping that holds ``loc[-1]``.

    ``loc`` is a pydantic error location such as ``("buffer", "batch_sise")``;
    list indices and the member tags pydantic adds for unions of models are
    followed. Returns field names and aliases, or None when the place is not a
    config section (e.g. a free-form ``workflow_args`` mapping).
    """
    current: list[Any] = [root or ReinforgeConfig]
    for part in loc[:-1]:
        inner = [t for tp in current for t in _inside(tp, part)]
        if not inner:  # a union tag such as 'TasksetConfig' names the member tried
            inner = [tp for tp in current if _is_model(tp) and tp.__name__ in str(part)]
        if not inner:
            return None
        current = inner
    keys: list[str] = []
    for tp in current:
        if dataclasses.is_dataclass(tp):  # a core type validated as a section (rollout_args)
            keys.extend(f.name for f in dataclasses.fields(tp) if f.name not in keys)
        if not _is_model(tp):
            continue
        for name, info in tp.model_fields.items():
            if name in _INTERNAL_FIELDS and tp is ReinforgeConfig:
                continue
            for key in (name, info.alias):
                if key and key not in keys:
                    keys.append(key)
    return keys or None


def config_json_schema() -> dict[str, Any]:
    """The JSON schema of a config file, for editors (completion, hover, checks).

    Both a field's name and its alias (``default_workflow_type`` and Trinity's
    ``default_workflow``) are listed, as the loader accepts either; the fields the
    loader fills in itself are left out.
    """
    by_name = ReinforgeConfig.model_json_schema(by_alias=False)
    by_alias = ReinforgeConfig.model_json_schema(by_alias=True)

    def merge(target: dict[str, Any], other: dict[str, Any]) -> None:
        names = target.get("properties", {})
        for key, value in other.get("properties", {}).items():
            names.setdefault(key, value)
        # a field with an alias may be given under either name: neither is required
        required = [r for r in target.get("required", []) if r in other.get("required", [])]
        if "required" in target:
            target["required"] = required

    merge(by_name, by_alias)
    for name, definition in by_name.get("$defs", {}).items():
        merge(definition, by_alias.get("$defs", {}).get(name, {}))
    for name in _INTERNAL_FIELDS:
        by_name.get("properties", {}).pop(name, None)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **by_name,
        "title": "reinforge config",
    }
