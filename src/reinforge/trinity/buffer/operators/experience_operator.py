"""Mirror of ``trinity.buffer.operators.experience_operator``."""

from reinforge.buffer.operators import (
    EXPERIENCE_OPERATORS,
    ExperienceOperator,
    ExperienceOperatorV1,
    create_operators,
)

__all__ = ["EXPERIENCE_OPERATORS", "ExperienceOperator", "ExperienceOperatorV1", "create_operators"]
