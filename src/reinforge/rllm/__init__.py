"""rLLM's module paths over reinforge: ``rllm.X`` becomes ``reinforge.rllm.X``.

Each module re-exports the reinforge names that rLLM code imports from the module of
the same path (see docs/migrating.md; ``reinforge migrate`` rewrites the imports).

The package itself offers what ``import rllm`` gives in rLLM 0.3: the decorators
``rollout`` and ``evaluator`` (``@rllm.rollout`` makes an AgentFlow), the data types
``Task``, ``Step``, ``Trajectory``, ``Episode``, ``Action`` and ``BaseAgent``, and,
reinforge's own, ``AgentFlowWorkflow`` / ``agentflow_workflow`` (an AgentFlow as a
workflow). They load on first use, so importing one mirror module stays light.
"""

from __future__ import annotations

from reinforge.core.lazy_exports import lazy_exports

__all__ = [
    "Action",
    "AgentFlowWorkflow",
    "BaseAgent",
    "Episode",
    "Step",
    "Task",
    "Trajectory",
    "agentflow_workflow",
    "evaluator",
    "rollout",
]

#: name -> the module that defines it
_HOMES = {
    "rollout": "reinforge.rllm.eval.rollout_decorator",
    "evaluator": "reinforge.rllm.eval.rollout_decorator",
    "Task": "reinforge.rllm.types",
    "Action": "reinforge.rllm.types",
    "Step": "reinforge.rllm.types",
    "Trajectory": "reinforge.rllm.types",
    "Episode": "reinforge.rllm.types",
    "BaseAgent": "reinforge.rllm.agents.agent",
    "AgentFlowWorkflow": "reinforge.workflows.agentflow.workflow",
    "agentflow_workflow": "reinforge.workflows.agentflow.workflow",
}


# globals() is called here, once: the submodule ``reinforge.rllm.globals`` (rLLM's
# ``rllm.globals``), once imported, is bound in this namespace as ``globals``
__getattr__, __dir__ = lazy_exports(__name__, globals(), _HOMES)
