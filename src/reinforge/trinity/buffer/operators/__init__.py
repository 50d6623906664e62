"""Mirror of ``trinity.buffer.operators``: the operator base and registry."""

from reinforge.buffer.operators import (
    EXPERIENCE_OPERATORS,
    ExperienceOperator,
    ExperienceOperatorV1,
)

__all__ = ["EXPERIENCE_OPERATORS", "ExperienceOperator", "ExperienceOperatorV1"]
