"""Math workflows: the simple workflow with math prompts and math-verify rewards."""

from __future__ import annotations

from reinforge.workflows.simple import AsyncSimpleWorkflow, SimpleWorkflow
from reinforge.workflows.workflow import WORKFLOWS

R1_SYSTEM_PROMPT = (
    "A conversation between User and Assistant. The user asks a question, and the Assistant "
    "solves it. The assistant first thinks about the reasoning process in the mind and then "
    "provides the user with the answer. The reasoning process and answer are enclosed within "
    "<think> </think> and <answer> </answer> tags, respectively, i.e., <think> reasoning "
    "process here </think> <answer> answer here </answer>."
)
BOXED_SYSTEM_PROMPT = "Solve the problem. Put the final answer in \\boxed{}."
QWEN_EVAL_SYSTEM_PROMPT = "Please reason step by step, and put your final answer within \\boxed{}."


@WORKFLOWS.register_module("math_workflow")
class MathWorkflow(SimpleWorkflow):
    """DeepSeek-R1 style: think/answer tags, scored by ``math_reward`` unless configured."""

    default_reward_fn = "math_reward"
    default_system_prompt = R1_SYSTEM_PROMPT


@WORKFLOWS.register_module("async_math_workflow")
class AsyncMathWorkflow(AsyncSimpleWorkflow):
    default_reward_fn = "math_reward"
    default_system_prompt = R1_SYSTEM_PROMPT


@WORKFLOWS.register_module("math_boxed_workflow")
class MathBoxedWorkflow(SimpleWorkflow):
    """Final answer in ``\\boxed{}``, scored by ``math_boxed_reward`` unless configured."""

    default_reward_fn = "math_boxed_reward"
    default_system_prompt = BOXED_SYSTEM_PROMPT


@WORKFLOWS.register_module("async_math_boxed_workflow")
class AsyncMathBoxedWorkflow(AsyncSimpleWorkflow):
    default_reward_fn = "math_boxed_reward"
    default_system_prompt = BOXED_SYSTEM_PROMPT


@WORKFLOWS.register_module("math_eval_workflow")
class MathEvalWorkflow(SimpleWorkflow):
    """Evaluation in the Qwen2.5-Math style: step-by-step reasoning, boxed answer, accuracy only."""

    default_reward_fn = "accuracy_reward"
    default_system_prompt = QWEN_EVAL_SYSTEM_PROMPT


@WORKFLOWS.register_module("async_math_eval_workflow")
class AsyncMathEvalWorkflow(AsyncSimpleWorkflow):
    default_reward_fn = "accuracy_reward"
    default_system_prompt = QWEN_EVAL_SYSTEM_PROMPT
