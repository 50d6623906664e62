"""The ``buffer`` config section: tasksets to explore and where experiences are stored."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from reinforge.buffer.taskset_config import TasksetConfig


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ExplorerInput(_Strict):
    taskset: TasksetConfig | None = None
    eval_tasksets: list[TasksetConfig] = Field(default_factory=list)


class StorageConfig(_Strict):
    path: str | None = Field(None, description="SQLite file; default RUN_DIR/buffer.db")


class OperatorConfig(_Strict):
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class PipelineConfig(_Strict):
    """Experience operators run between the explorer and the buffer, in order."""

    operators: list[OperatorConfig] = Field(default_factory=list)
    on_error: Literal["skip", "raise"] = "skip"


class BufferConfig(_Strict):
    batch_size: int = Field(16, ge=1, description="tasks per explore step")
    total_epochs: int = Field(1, ge=1)
    total_steps: int | None = Field(None, ge=1)
    explorer_input: ExplorerInput = Field(default_factory=ExplorerInput)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    experience_pipeline: PipelineConfig = Field(default_factory=PipelineConfig)
