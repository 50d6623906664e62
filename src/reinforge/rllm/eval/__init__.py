"""Mirror of ``rllm.eval``: the AgentFlow / Evaluator API rLLM 0.3 re-exports here.

Names load on first use (rLLM does the same), so importing ``reinforge.rllm.eval.types``
alone stays light.
"""

from __future__ import annotations

from reinforge.core.lazy_exports import lazy_exports

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


__getattr__, __dir__ = lazy_exports(__name__, globals(), _HOMES)
