"""Mirror of ``trinity.buffer.operators.mappers``."""
