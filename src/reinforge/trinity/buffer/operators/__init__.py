"""Mirror of ``trinity.buffer.operators``: the operator bases, registry and factory, and
the built-in operators that Trinity-RFT 0.3.x also exported from this package."""

from reinforge.buffer.operators import (
    EXPERIENCE_OPERATORS,
    ExperienceOperator,
    ExperienceOperatorV1,
    PassRateCalculator,
    RewardFilter,
    RewardShapingMapper,
    create_operators,
)
from reinforge.buffer.operators import RewardStdFilter as RewardSTDFilter

__all__ = [
    "EXPERIENCE_OPERATORS",
    "ExperienceOperator",
    "ExperienceOperatorV1",
    "PassRateCalculator",
    "RewardFilter",
    "RewardSTDFilter",
    "RewardShapingMapper",
    "create_operators",
]
