"""Mirror of ``rllm.eval``: the AgentFlow / Evaluator API rLLM 0.3 re-exports here.

Names load on first use (rLLM does the same), so importing ``reinforge.rllm.eval.types``
alone stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "AgentConfig",
    "AgentFlow",
    "EvalOutput",
    "Evaluator",
    "Signal",
    "evaluator",
    "rollout",
    "run_agent_flow",
]

#: name -> the module that defines it
_HOMES = {
    "AgentConfig": "reinforge.rllm.types",
    "AgentFlow": "reinforge.rllm.types",
    "Evaluator": "reinforge.rllm.types",
    "run_agent_flow": "reinforge.rllm.types",
    "EvalOutput": "reinforge.rllm.eval.types",
    "Signal": "reinforge.rllm.eval.types",
    "evaluator": "reinforge.rllm.eval.rollout_decorator",
    "rollout": "reinforge.rllm.eval.rollout_decorator",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
