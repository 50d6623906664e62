"""Buffers: experience storage and taskset reading."""

from reinforge.buffer.sqlite_storage import (
    BufferCorruptError,
    BufferStorageError,
    SQLiteExperienceStorage,
    TaskRecord,
)
from reinforge.buffer.taskset import (
    InvalidRow,
    LoadedTaskset,
    TasksetError,
    load_taskset,
    read_rows,
)
from reinforge.buffer.taskset_config import (
    FormatSection,
    ReasoningGymSource,
    RolloutArgs,
    TasksetConfig,
)

__all__ = [
    "BufferCorruptError",
    "BufferStorageError",
    "FormatSection",
    "InvalidRow",
    "LoadedTaskset",
    "ReasoningGymSource",
    "RolloutArgs",
    "SQLiteExperienceStorage",
    "TaskRecord",
    "TasksetConfig",
    "TasksetError",
    "load_taskset",
    "read_rows",
]
