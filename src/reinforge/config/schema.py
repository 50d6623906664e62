"""The YAML schema, validated with pydantic. Unknown keys are errors.

Each layer owns its own section (``ModelConfig`` in models, ``BufferConfig`` in
buffer, ``ExplorerConfig`` in explorer); this module composes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from reinforge.buffer.buffer_config import BufferConfig
from reinforge.explorer.explorer_config import ExplorerConfig
from reinforge.models.model_config import ModelConfig


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class MonitorConfig(_Strict):
    progress: bool = True
    jsonl: bool = True


class ReinforgeConfig(_Strict):
    """A whole run."""

    project: str = "reinforge"
    name: str = "run"
    run_dir: str | None = Field(None, description="default: runs/PROJECT/NAME")
    mode: Literal["explore", "eval"] = "explore"
    model: ModelConfig = Field(default_factory=ModelConfig)
    buffer: BufferConfig = Field(default_factory=BufferConfig)
    explorer: ExplorerConfig = Field(default_factory=ExplorerConfig)
    monitor: MonitorConfig = Field(default_factory=MonitorConfig)
    # where the YAML file lives: relative taskset paths resolve against it
    config_dir: str | None = Field(None, exclude=True)

    @property
    def resolved_run_dir(self) -> Path:
        return Path(self.run_dir) if self.run_dir else Path("runs") / self.project / self.name

    @property
    def storage_path(self) -> Path:
        return (
            Path(self.buffer.storage.path)
            if self.buffer.storage.path
            else self.resolved_run_dir / "buffer.db"
        )
