"""Policy models: the ModelWrapper that workflows use and the engines behind it."""

from reinforge.models.catalog import ModelNotFoundError, known_models, resolve_model_path
from reinforge.models.engine import Completion, InferenceEngine, SamplingParams
from reinforge.models.factory import create_engine
from reinforge.models.mock_engine import MockEngine
from reinforge.models.model_wrapper import ModelWrapper

__all__ = [
    "Completion",
    "InferenceEngine",
    "MockEngine",
    "ModelNotFoundError",
    "ModelWrapper",
    "SamplingParams",
    "create_engine",
    "known_models",
    "resolve_model_path",
]
