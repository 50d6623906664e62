"""ReAct agents that solve math problems with a Python tool: Trinity-RFT's
``AgentScopeReActWorkflow`` (``agentscope_react_workflow``, also ``as_react_workflow``),
``AgentScopeReactMathWorkflow`` (``agentscope_react_math_workflow``) and
``AgentScopeV0ReactMathWorkflow`` (``agentscopev0_react_math_workflow``).

Each rollout asks an AgentScope ReAct agent (the policy, with an
``execute_python_code`` tool) the task's question. The first two want a structured
final answer, a ``result`` field with the answer in ``\\boxed{}``, which the agent
gives by calling AgentScope's ``GenerateStructuredOutput`` tool; the V0 workflow, as
AgentScope's 0.x agent did, takes the agent's final text and runs synchronously (on
the runner's thread). The answer is scored by the boxed-math reward against the
truth (a GSM8K solution's part after ``####``); every model call of the run is an
experience with that reward.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, Field

from reinforge.core import Experience, Task
from reinforge.rewards import MathBoxedRewardFn
from reinforge.workflows.agentscope.chat_model import (
    SyncClientAsAsync,
    chat_model_over,
    sampling_parameters,
)
from reinforge.workflows.agentscope.react_agent import (
    PYTHON_TIMEOUT,
    python_code_tool,
    react_agent,
    reply_text,
    structured_field,
)
from reinforge.workflows.agentscope.react_base import AgentScopeReActBase, gsm8k_answer
from reinforge.workflows.workflow import WORKFLOWS

MATH_SYSTEM_PROMPT = (
    "You are an agent that solves math problems with tools. Solve the problem you are "
    "given; you can write and run Python code to calculate or check your answer. Give "
    "your final answer within \\boxed{}."
)


class BoxedAnswer(BaseModel):
    """The structured final answer the math agents give."""

    result: str = Field(
        description="Your solution of the math problem, with the final answer in boxed "
        "form, e.g. \\boxed{42}"
    )


class _MathReActBase(AgentScopeReActBase):
    """Python tool, boxed-math reward; ``workflow_args.python_timeout`` (s) bounds a call."""

    def reset(self, task: Task) -> None:
        super().reset(task)
        self.answer = gsm8k_answer(self.truth)
        self.reward_fn = MathBoxedRewardFn()
        self.python_timeout = float(self.workflow_args.get("python_timeout", PYTHON_TIMEOUT))
        self.system_prompt = task.format_args.system_prompt or MATH_SYSTEM_PROMPT

    def score(self, answer: str) -> tuple[float, dict[str, float]]:
        components = self.reward_fn(response=answer, truth=self.answer)
        return float(sum(components.values())), {k: float(v) for k, v in components.items()}

    def math_agent(self, chat_model: Any) -> Any:
        return react_agent(
            chat_model,
            self.system_prompt,
            tools=[python_code_tool(self.python_timeout)],
            max_iters=self.max_iters,
            name="math_react_agent",
        )


@WORKFLOWS.register_module("agentscope_react_math_workflow")
class AgentScopeReactMathWorkflow(_MathReActBase):
    """A ReAct agent with a Python tool; its structured ``result`` is scored."""

    async def run_async(self) -> list[Experience]:
        agent = self.math_agent(self.chat_model())
        reply = await self.ask_agent(agent, self.task_desc, BoxedAnswer)
        reward, metrics = self.score(structured_field(reply, "result"))
        return self.experiences(reward, metrics)


#: the task types ``agentscope_react_workflow`` has a template for (``workflow_args.type``)
REACT_TEMPLATES = {"gsm8k": (MATH_SYSTEM_PROMPT, BoxedAnswer)}


@WORKFLOWS.register_module("agentscope_react_workflow")
@WORKFLOWS.register_module("as_react_workflow")
class AgentScopeReActWorkflow(_MathReActBase):
    """Trinity's template-driven ReAct workflow: ``workflow_args.type`` picks the
    system prompt and answer structure (``gsm8k``, the default, is the one there is)."""

    def reset(self, task: Task) -> None:
        super().reset(task)
        task_type = self.workflow_args.get("type", "gsm8k")
        if task_type not in REACT_TEMPLATES:
            raise ValueError(
                f"task {task.task_id!r}: agentscope_react_workflow has no template for "
                f"workflow_args.type {task_type!r}; known: {sorted(REACT_TEMPLATES)}"
            )
        prompt, self.answer_schema = REACT_TEMPLATES[task_type]
        self.system_prompt = task.format_args.system_prompt or prompt

    async def run_async(self) -> list[Experience]:
        agent = self.math_agent(self.chat_model())
        reply = await self.ask_agent(agent, self.task_desc, self.answer_schema)
        reward, metrics = self.score(structured_field(reply, "result"))
        return self.experiences(reward, metrics)


@WORKFLOWS.register_module("agentscopev0_react_math_workflow")
class AgentScopeV0ReactMathWorkflow(_MathReActBase):
    """The AgentScope 0.x-style math agent: synchronous (``run``), at most 5 iterations
    by default, its final text (with ``\\boxed{}``) is the answer."""

    is_async = False
    default_max_iters = 5

    def run(self) -> list[Experience]:
        # a private event loop on the runner's thread; the sync client blocks only it
        client = SyncClientAsAsync(self.model.get_openai_client())
        chat_model = chat_model_over(client, parameters=sampling_parameters(self.rollout_args))
        reply = asyncio.run(self.ask_agent(self.math_agent(chat_model), self.task_desc))
        reward, metrics = self.score(reply_text(reply))
        return self.experiences(reward, metrics)
