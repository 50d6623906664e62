"""Mirror of ``rllm.eval.types``: what an Evaluator returns.

Defined in ``reinforge.core.eval_output`` (the AgentFlow runtime that applies the
verdicts is ``reinforge.workflows.agentflow``).
"""

from reinforge.core.eval_output import (
    EvalOutput,
    EvalOutputError,
    Signal,
    coerce_eval_output,
)

__all__ = ["EvalOutput", "EvalOutputError", "Signal", "coerce_eval_output"]
