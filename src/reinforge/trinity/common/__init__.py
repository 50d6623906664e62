"""Mirror of ``trinity.common``."""
