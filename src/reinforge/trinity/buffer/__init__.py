"""Mirror of ``trinity.buffer``."""
