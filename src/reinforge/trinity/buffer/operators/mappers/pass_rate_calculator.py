"""Mirror of ``trinity.buffer.operators.mappers.pass_rate_calculator``."""

from reinforge.buffer.operators import PassRateCalculator

__all__ = ["PassRateCalculator"]
