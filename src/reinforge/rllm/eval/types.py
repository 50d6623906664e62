"""Mirror of ``rllm.eval.types``: what an Evaluator returns.

Defined in ``reinforge.workflows.agentflow.verdicts``, beside the AgentFlow runtime
that applies the verdicts.
"""

from reinforge.workflows.agentflow.verdicts import (
    EvalOutput,
    EvalOutputError,
    Signal,
    coerce_eval_output,
)

__all__ = ["EvalOutput", "EvalOutputError", "Signal", "coerce_eval_output"]
