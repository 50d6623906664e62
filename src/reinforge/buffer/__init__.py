"""Buffers: experience storage and taskset reading.

Names load on first use, so reading a config (which needs only the config
sections) does not import SQLAlchemy or torch.
"""

from __future__ import annotations

from reinforge.core.lazy_exports import lazy_exports

_STORAGE = "reinforge.buffer.sqlite_storage"
_TASKSET = "reinforge.buffer.taskset"
_CONFIG = "reinforge.buffer.taskset_config"
_EXPORTS = {
    "BufferCorruptError": _STORAGE,
    "BufferStorageError": _STORAGE,
    "SQLiteExperienceStorage": _STORAGE,
    "TaskRecord": _STORAGE,
    "InvalidRow": _TASKSET,
    "LoadedTaskset": _TASKSET,
    "TasksetError": _TASKSET,
    "load_taskset": _TASKSET,
    "read_rows": _TASKSET,
    "FormatSection": _CONFIG,
    "ReasoningGymSource": _CONFIG,
    "RolloutArgs": _CONFIG,
    "TasksetConfig": _CONFIG,
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
