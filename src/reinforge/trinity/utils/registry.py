"""Mirror of ``trinity.utils.registry``: ``Registry``."""

from reinforge.core import Registry

__all__ = ["Registry"]
