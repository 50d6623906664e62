"""Mirror of ``trinity.buffer.operators.mappers.reward_shaping_mapper``."""

from reinforge.buffer.operators import RewardShapingMapper

__all__ = ["RewardShapingMapper"]
