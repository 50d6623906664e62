"""Mirror of ``trinity.common.models``."""

from reinforge.models import ModelWrapper

__all__ = ["ModelWrapper"]
