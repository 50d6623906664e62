"""Mirror of ``trinity.common.models.model``: ``ModelWrapper``."""

from reinforge.models import ModelWrapper

__all__ = ["ModelWrapper"]
