"""The AgentFlow runtime: rLLM 0.3 agent programs run as reinforge workflows.

``session`` gives a rollout its endpoint (the recording server and a wrapper's own
history), ``calls`` says which recorded call each step trains on, ``evaluators`` how
an episode is scored, ``workflow`` is the ``Workflow`` that ties them together. The
data types and protocols it runs on are plain records in ``reinforge.core.agentflow``
and ``reinforge.core.eval_output``. The rLLM mirror (``reinforge.rllm``) re-exports
all of it under rLLM's module paths.
"""

from reinforge.workflows.agentflow.workflow import AgentFlowWorkflow, agentflow_workflow

__all__ = ["AgentFlowWorkflow", "agentflow_workflow"]
