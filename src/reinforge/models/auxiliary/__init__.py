"""Auxiliary models (judges, reward models, tools) and the judge helper.

Names load on first use: the config section (``AuxiliaryModelConfig``) is read
without importing the openai client.
"""

from __future__ import annotations

from reinforge.core.lazy_exports import lazy_exports

_JUDGE = "reinforge.models.auxiliary.judge"
_MODEL = "reinforge.models.auxiliary.model"
_EXPORTS = {
    "VerdictCache": "reinforge.models.auxiliary.cache",
    "AuxiliaryModelConfig": "reinforge.models.auxiliary.config",
    "Judge": _JUDGE,
    "JudgeReplyError": _JUDGE,
    "Verdict": _JUDGE,
    "extract_json": _JUDGE,
    "json_reply": _JUDGE,
    "AsyncAuxiliaryOpenAI": _MODEL,
    "AuxiliaryModel": _MODEL,
    "AuxiliaryModels": _MODEL,
    "AuxiliaryOpenAI": _MODEL,
    "UnknownAuxiliaryModel": _MODEL,
    "build_auxiliary_model": _MODEL,
    "pick_client": _MODEL,
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
