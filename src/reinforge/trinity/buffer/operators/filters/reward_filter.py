"""Mirror of ``trinity.buffer.operators.filters.reward_filter``
(reinforge's filters, whose metric names differ: see docs/migrating.md)."""

from reinforge.buffer.operators import (
    InvalidRewardFilter,
    RewardFilter,
)
from reinforge.buffer.operators import (
    RewardStdFilter as RewardSTDFilter,
)

__all__ = ["InvalidRewardFilter", "RewardFilter", "RewardSTDFilter"]
