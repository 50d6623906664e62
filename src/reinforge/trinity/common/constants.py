"""Mirror of ``trinity.common.constants``: the names and enumerations Trinity-RFT code
reads (``OpType`` for reward shaping, ``PromptType``, ``StorageType``, ``SyncMethod``...).

reinforge's own settings are plain YAML strings; these enumerations exist so that code
comparing against them (``op == OpType.ADD``) or building them from strings
(``SyncMethod("NCCL")``) runs. The case-insensitive ones accept any case of a member's
name or value.
"""

from __future__ import annotations

import logging
from enum import Enum, EnumMeta
from typing import Any

logger = logging.getLogger(__name__)

EXPLORER_NAME = "explorer"
TRAINER_NAME = "trainer"
ROLLOUT_WEIGHT_SYNC_GROUP_NAME = "rollout_weight_sync"

#: environment variables Trinity-RFT reads (reinforge reads none of them)
CHECKPOINT_ROOT_DIR_ENV_VAR = "TRINITY_CHECKPOINT_ROOT_DIR"
PREVIOUS_STAGE_CHECKPOINT_DIR_ENV_VAR = "TRINITY_PREV_STAGE_CKPT_DIR"
MODEL_PATH_ENV_VAR = "TRINITY_MODEL_PATH"
TASKSET_PATH_ENV_VAR = "TRINITY_TASKSET_PATH"
BUFFER_PATH_ENV_VAR = "TRINITY_BUFFER_PATH"
PLUGIN_DIRS_ENV_VAR = "TRINITY_PLUGIN_DIRS"
LOG_DIR_ENV_VAR = "TRINITY_LOG_DIR"
LOG_LEVEL_ENV_VAR = "TRINITY_LOG_LEVEL"
LOG_NODE_IP_ENV_VAR = "TRINITY_LOG_NODE_IP"

MAX_MODEL_LEN = 4096

#: the key of the per-taskset pass rates in upstream's pipeline metrics (reinforge's
#: explorer feeds its task selectors directly; see reinforge.buffer.task_scheduler)
SELECTOR_METRIC = "selector_metric"


class CaseInsensitiveEnumMeta(EnumMeta):
    """Members by name in any case (``E["fifo"]``, ``E.fifo``), by value in any case."""

    def __getitem__(cls, name: str) -> Any:
        return super().__getitem__(name.upper())

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("_"):
            return super().__getattr__(name)  # type: ignore[misc]
        return cls[name]

    def __call__(cls, value: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(value, str):
            value = value.lower()
        return super().__call__(value, *args, **kwargs)


class CaseInsensitiveEnum(Enum, metaclass=CaseInsensitiveEnumMeta):
    pass


class PromptType(CaseInsensitiveEnum):
    MESSAGES = "messages"
    CHATPAIR = "chatpair"
    PLAINTEXT = "plaintext"


class TaskType(Enum):
    EXPLORE = 0
    EVAL = 1


class ReadStrategy(CaseInsensitiveEnum):
    DEFAULT = None
    FIFO = "fifo"
    RANDOM = "random"
    LRU = "lru"
    LFU = "lfu"
    PRIORITY = "priority"


class StorageType(CaseInsensitiveEnum):
    SQL = "sql"
    QUEUE = "queue"
    FILE = "file"


class MonitorType(CaseInsensitiveEnum):
    WANDB = "wandb"
    TENSORBOARD = "tensorboard"


class SyncMethodEnumMeta(CaseInsensitiveEnumMeta):
    """``SyncMethod``'s: the old names ``online`` / ``offline`` still read (with a warning)."""

    _RENAMED = {"online": "nccl", "offline": "checkpoint"}

    def __call__(cls, value: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(value, str) and value.lower() in cls._RENAMED:
            new = cls._RENAMED[value.lower()]
            logger.warning("SyncMethod %r is deprecated, use %r instead.", value, new)
            value = new
        try:
            return super().__call__(value, *args, **kwargs)
        except ValueError:
            raise ValueError(f"Invalid SyncMethod: {value}") from None


class SyncMethod(CaseInsensitiveEnum, metaclass=SyncMethodEnumMeta):
    NCCL = "nccl"
    CHECKPOINT = "checkpoint"
    MEMORY = "memory"


class RunningStatus(Enum):
    RUNNING = "running"
    REQUIRE_SYNC = "require_sync"
    WAITING_SYNC = "waiting_sync"
    STOPPED = "stopped"


class DataProcessorPipelineType(Enum):
    EXPERIENCE = "experience_pipeline"
    TASK = "task_pipeline"


class OpType(Enum):
    """How ``RewardShapingMapper`` combines a reward with a field."""

    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"


class SyncStyle(CaseInsensitiveEnum):
    FIXED = "fixed"
    DYNAMIC_BY_TRAINER = "dynamic_by_trainer"
    DYNAMIC_BY_EXPLORER = "dynamic_by_explorer"


__all__ = [
    "BUFFER_PATH_ENV_VAR",
    "CHECKPOINT_ROOT_DIR_ENV_VAR",
    "EXPLORER_NAME",
    "LOG_DIR_ENV_VAR",
    "LOG_LEVEL_ENV_VAR",
    "LOG_NODE_IP_ENV_VAR",
    "MAX_MODEL_LEN",
    "MODEL_PATH_ENV_VAR",
    "PLUGIN_DIRS_ENV_VAR",
    "PREVIOUS_STAGE_CHECKPOINT_DIR_ENV_VAR",
    "ROLLOUT_WEIGHT_SYNC_GROUP_NAME",
    "SELECTOR_METRIC",
    "TASKSET_PATH_ENV_VAR",
    "TRAINER_NAME",
    "CaseInsensitiveEnum",
    "CaseInsensitiveEnumMeta",
    "DataProcessorPipelineType",
    "MonitorType",
    "OpType",
    "PromptType",
    "ReadStrategy",
    "RunningStatus",
    "StorageType",
    "SyncMethod",
    "SyncMethodEnumMeta",
    "SyncStyle",
    "TaskType",
]
