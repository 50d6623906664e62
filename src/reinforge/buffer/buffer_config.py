"""The ``buffer`` config section: tasksets to explore and where experiences are stored."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from reinforge.buffer.sft_dataset_config import TrainerInput
from reinforge.buffer.taskset_config import TasksetConfig, refuse_eval_selectors
from reinforge.core.strict_model import StrictModel


class ExplorerInput(StrictModel):
    taskset: TasksetConfig | None = None
    eval_tasksets: list[TasksetConfig] = Field(default_factory=list)

    @model_validator(mode="after")
    def _no_eval_selector(self) -> ExplorerInput:
        refuse_eval_selectors(self.eval_tasksets)
        return self


class StorageConfig(StrictModel):
    path: str | None = Field(None, description="SQLite file; default RUN_DIR/buffer.db")


class OperatorConfig(StrictModel):
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class PipelineConfig(StrictModel):
    """Experience operators run between the explorer and the buffer, in order."""

    operators: list[OperatorConfig] = Field(default_factory=list)
    on_error: Literal["skip", "raise"] = "skip"


class BufferConfig(StrictModel):
    batch_size: int = Field(
        16, ge=1, description="tasks per explore step (mode sft: conversations per step)"
    )
    total_epochs: int = Field(1, ge=1)
    total_steps: int | None = Field(None, ge=1)
    explorer_input: ExplorerInput = Field(default_factory=ExplorerInput)
    trainer_input: TrainerInput = Field(default_factory=TrainerInput)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    experience_pipeline: PipelineConfig = Field(default_factory=PipelineConfig)
