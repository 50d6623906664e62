"""Mirror of ``rllm.types`` (rLLM 0.3): the data types and the AgentFlow / Evaluator protocols.

Defined in ``reinforge.workflows.agentflow.types``, beside the runtime that runs
AgentFlows; see that module for what each type adds to reinforge's episode records.
"""

from reinforge.workflows.agentflow.types import (
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
