"""Auxiliary models (judges, reward models, tools) and the judge helper."""

from reinforge.models.auxiliary.cache import VerdictCache
from reinforge.models.auxiliary.config import AuxiliaryModelConfig
from reinforge.models.auxiliary.judge import (
    Judge,
    JudgeReplyError,
    Verdict,
    extract_json,
    json_reply,
)
from reinforge.models.auxiliary.model import (
    AsyncAuxiliaryOpenAI,
    AuxiliaryModel,
    AuxiliaryModels,
    AuxiliaryOpenAI,
    UnknownAuxiliaryModel,
    build_auxiliary_model,
    pick_client,
)

__all__ = [
    "AsyncAuxiliaryOpenAI",
    "AuxiliaryModel",
    "AuxiliaryModelConfig",
    "AuxiliaryModels",
    "AuxiliaryOpenAI",
    "Judge",
    "JudgeReplyError",
    "UnknownAuxiliaryModel",
    "Verdict",
    "VerdictCache",
    "build_auxiliary_model",
    "extract_json",
    "json_reply",
    "pick_client",
]
