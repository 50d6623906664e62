"""Mirror of ``trinity.buffer.operators.filters``."""
