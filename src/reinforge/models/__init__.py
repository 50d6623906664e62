"""Policy models: the ModelWrapper that workflows use and the engines behind it.

Names load on first use, so the config sections (``model_config``) can be read
without importing torch or transformers.
"""

from __future__ import annotations

from reinforge.core.lazy_exports import lazy_exports

# registers the OpenAI protocol's builders with ModelWrapper (see openai_api)
from reinforge.models import openai_api as openai_api

_EXPORTS = {
    "ModelNotFoundError": "reinforge.models.catalog",
    "known_models": "reinforge.models.catalog",
    "resolve_model_path": "reinforge.models.catalog",
    "Completion": "reinforge.models.engine",
    "InferenceEngine": "reinforge.models.engine",
    "SamplingParams": "reinforge.models.engine",
    "create_engine": "reinforge.models.factory",
    "MockEngine": "reinforge.models.engines.mock",
    "InferenceModelConfig": "reinforge.models.wrapper.inference_config",
    "ModelWrapper": "reinforge.models.model_wrapper",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
