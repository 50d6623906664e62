"""The AgentFlow runtime: rLLM 0.3 agent programs run as reinforge workflows.

``types`` holds rLLM 0.3's data types and protocols, ``verdicts`` what an evaluator
returns, ``session`` a rollout's endpoint (the recording server and a wrapper's own
history), ``calls`` which recorded call each step trains on, ``evaluators`` how an
episode is scored, ``workflow`` the ``Workflow`` that ties them together. The rLLM
mirror (``reinforge.rllm``) re-exports all of it under rLLM's module paths.
"""

from reinforge.workflows.agentflow.workflow import AgentFlowWorkflow, agentflow_workflow

__all__ = ["AgentFlowWorkflow", "agentflow_workflow"]
