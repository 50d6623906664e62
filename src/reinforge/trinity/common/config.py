"""Mirror of ``trinity.common.config``: the per-taskset format and sampling settings, and
the rollout model's settings (``model.config``)."""

from reinforge.core import FormatConfig, GenerationConfig
from reinforge.models import InferenceModelConfig

__all__ = ["FormatConfig", "GenerationConfig", "InferenceModelConfig"]
