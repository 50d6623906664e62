"""rLLM 0.3 AgentFlows as reinforge workflows (``reinforge.rllm``'s names for them).

The runtime lives in the workflows layer, ``reinforge.workflows.agentflow``; this
module keeps the names it had here importable.
"""

from reinforge.workflows.agentflow.calls import RecordedCall, claim_calls
from reinforge.workflows.agentflow.evaluators import (
    RewardFnEvaluator,
    apply_eval_output,
    carried_rewards,
    resolve_evaluator,
)
from reinforge.workflows.agentflow.workflow import AgentFlowWorkflow, agentflow_workflow

__all__ = [
    "AgentFlowWorkflow",
    "RecordedCall",
    "RewardFnEvaluator",
    "agentflow_workflow",
    "apply_eval_output",
    "carried_rewards",
    "claim_calls",
    "resolve_evaluator",
]
