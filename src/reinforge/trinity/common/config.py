"""Mirror of ``trinity.common.config``: the per-taskset format and sampling settings."""

from reinforge.core import FormatConfig, GenerationConfig

__all__ = ["FormatConfig", "GenerationConfig"]
