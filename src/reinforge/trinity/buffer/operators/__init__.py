"""Mirror of ``trinity.buffer.operators``: the operator bases, registry and factory."""

from reinforge.buffer.operators import (
    EXPERIENCE_OPERATORS,
    ExperienceOperator,
    ExperienceOperatorV1,
    create_operators,
)

__all__ = ["EXPERIENCE_OPERATORS", "ExperienceOperator", "ExperienceOperatorV1", "create_operators"]
