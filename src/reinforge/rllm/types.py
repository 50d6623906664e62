"""Mirror of ``rllm.types`` (rLLM 0.3): the data types and the AgentFlow / Evaluator protocols.

Defined in ``reinforge.core.agentflow``, beside reinforge's episode records that they
extend (the runtime that runs AgentFlows is ``reinforge.workflows.agentflow``).
"""

from reinforge.core.agentflow import (
    Action,
    AgentConfig,
    AgentFlow,
    AgentFlowReturnError,
    Episode,
    Evaluator,
    Step,
    Task,
    Trajectory,
    coerce_to_episode,
    flow_accepts_env,
    flow_label,
    run_agent_flow,
)

__all__ = [
    "Action",
    "AgentConfig",
    "AgentFlow",
    "AgentFlowReturnError",
    "Episode",
    "Evaluator",
    "Step",
    "Task",
    "Trajectory",
    "coerce_to_episode",
    "flow_accepts_env",
    "flow_label",
    "run_agent_flow",
]
