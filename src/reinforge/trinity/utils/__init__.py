"""Mirror of ``trinity.utils``."""
