"""Mirror of ``trinity.buffer.selector.selector``: the built-in task selectors."""

from reinforge.buffer.task_selectors import (
    BaseSelector,
    DifficultyBasedSelector,
    OfflineEasy2HardSelector,
    RandomSelector,
    SequentialSelector,
    ShuffleSelector,
)

__all__ = [
    "BaseSelector",
    "DifficultyBasedSelector",
    "OfflineEasy2HardSelector",
    "RandomSelector",
    "SequentialSelector",
    "ShuffleSelector",
]
