"""The AgentFlow tests' shared flows and helpers: flows written as rLLM cookbooks write
them (math, solver-judge, gateway-only, sync docs), their evaluators, the recording
mock engine and the task and run helpers. A module of its own so the test files
share one copy.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from openai import AsyncOpenAI, OpenAI

import reinforge.rllm as rllm
from reinforge.core import FormatConfig, GenerationConfig
from reinforge.core import Task as ReinforgeTask
from reinforge.models import MockEngine, ModelWrapper
from reinforge.rllm.agentflow_runner import agentflow_workflow
from reinforge.rllm.eval.types import EvalOutput, Signal
from reinforge.rllm.types import (
    AgentConfig,
    Episode,
    Step,
    Task,
    Trajectory,
)

ROW = {"question": "What is 6 * 7?", "answer": "42"}


# ---- flows written as rLLM's cookbooks write them ---------------------------------------


@rllm.rollout(name="math")
async def math_flow(task: Task, config: AgentConfig) -> Episode:
    """cookbooks/math: one call, the reply stored on the step and as the answer."""
    client = AsyncOpenAI(base_url=config.base_url, api_key="EMPTY")
    messages = [
        {"role": "system", "content": "Put the final answer in \\boxed{}."},
        {"role": "user", "content": task.instruction},
    ]
    response = await client.chat.completions.create(model=config.model, messages=messages)
    content = response.choices[0].message.content or ""
    messages.append({"role": "assistant", "content": content})
    step = Step(chat_completions=messages, model_response=content, action=content)
    return Episode(
        trajectories=[Trajectory(name="math", steps=[step])], artifacts={"answer": content}
    )


@rllm.evaluator
def boxed_evaluator(task: dict, episode: Episode) -> EvalOutput:
    found = re.findall(r"\\boxed\{([^}]*)\}", str(episode.artifacts.get("answer", "")))
    correct = bool(found) and found[-1].strip() == str(task["answer"])
    return EvalOutput(
        reward=1.0 if correct else 0.0,
        is_correct=correct,
        signals=[Signal(name="boxed", value=float(bool(found)))],
        metadata={"n_boxed": len(found), "note": "text is not a metric"},
    )


N_SOLUTIONS = 2


@rllm.rollout(name="solver-judge")
async def solver_judge_flow(task: Task, config: AgentConfig) -> Episode:
    """cookbooks/solver_judge_flow: N solvers in parallel, then a judge picks one."""
    client = AsyncOpenAI(base_url=config.base_url, api_key="EMPTY")

    async def solve(i: int) -> Trajectory:
        messages = [{"role": "user", "content": f"Solver {i}: {task.instruction}"}]
        response = await client.chat.completions.create(model=config.model, messages=messages)
        content = response.choices[0].message.content or ""
        step = Step(
            chat_completions=[*messages, {"role": "assistant", "content": content}],
            model_response=content,
            action=content,
        )
        return Trajectory(name="solver", steps=[step])

    solvers = await asyncio.gather(*(solve(i) for i in range(N_SOLUTIONS)))
    listing = "\n".join(f"{i + 1}. {t.steps[0].action}" for i, t in enumerate(solvers))
    messages = [{"role": "user", "content": f"Judge: pick the right one.\n{listing}"}]
    response = await client.chat.completions.create(model=config.model, messages=messages)
    content = response.choices[0].message.content or ""
    picked = re.search(r"<answer>(\d+)</answer>", content)
    selected = solvers[int(picked.group(1)) - 1].steps[0].action if picked else ""
    judge = Trajectory(
        name="judge",
        steps=[Step(chat_completions=messages, model_response=content, action=selected)],
    )
    return Episode(trajectories=[*solvers, judge], artifacts={"answer": selected})


@rllm.evaluator
def solver_judge_evaluator(task: dict, episode: Episode) -> EvalOutput:
    """Scores solvers and judge apart, as cookbooks/solver_judge_flow's evaluator does."""
    judge_reward = 0.0
    for traj in episode.trajectories:
        answer = str(traj.steps[-1].action if traj.steps else "")
        traj.reward = 1.0 if f"\\boxed{{{task['answer']}}}" in answer else 0.0
        if traj.name == "judge":
            judge_reward = traj.reward
    return EvalOutput(reward=judge_reward, is_correct=judge_reward > 0)


def solver_judge_replies(prompt: str, index: int) -> str:
    if "Judge:" in prompt:
        return "Solution 2 is right. <answer>2</answer>"
    if "Solver 0:" in prompt:
        return "I think it is \\boxed{41}."
    return "It is \\boxed{42}."


@rllm.rollout
async def gateway_only_flow(task: Task, config: AgentConfig) -> None:
    """rLLM's 'return None' form: the gateway's record of the calls is the trajectory."""
    client = AsyncOpenAI(base_url=config.base_url, api_key="EMPTY")
    messages = [{"role": "user", "content": task.instruction}]
    first = await client.chat.completions.create(model=config.model, messages=messages)
    messages += [
        {"role": "assistant", "content": first.choices[0].message.content or ""},
        {"role": "user", "content": "Check it: what is 6 * 7?"},
    ]
    await client.chat.completions.create(model=config.model, messages=messages)
    return None


def sync_docs_flow(task: Task, config: AgentConfig) -> Episode:
    """The AgentFlow of rLLM's docs: a sync client, the answer kept as ``Step.output``."""
    client = OpenAI(base_url=config.base_url, api_key="unused")
    response = client.chat.completions.create(
        model=config.model, messages=[{"role": "user", "content": task.instruction}]
    )
    answer = response.choices[0].message.content
    step = Step(input=task.instruction, output=answer)
    return Episode(trajectories=[Trajectory(steps=[step], output=answer)])


class MathAgentFlow:
    """A class-based AgentFlow with ``run`` only (the protocol's sync form)."""

    def run(self, task: Task, config: AgentConfig) -> Episode:
        return sync_docs_flow(task, config)


# ---- helpers ----------------------------------------------------------------------------


class RecordingEngine(MockEngine):
    """The mock engine, keeping the sampling parameters of every request."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.params: list[Any] = []

    def submit(self, prompt_ids: list[int], params: Any) -> Any:
        self.params.append(params)
        return super().submit(prompt_ids, params)


def model(replies: Any = None, **kwargs: Any) -> ModelWrapper:
    engine = RecordingEngine(replies=replies, policy=None if replies else "arithmetic", **kwargs)
    return ModelWrapper(engine)


def make_task(
    workflow: Any,
    *,
    row: dict | None = None,
    repeat_times: int = 2,
    is_eval: bool = False,
    reward_fn: Any = None,
    rollout_args: GenerationConfig | None = None,
    **workflow_args: Any,
) -> ReinforgeTask:
    if not isinstance(workflow, type):
        workflow = agentflow_workflow(workflow)
    return ReinforgeTask(
        workflow=workflow,
        raw_task=dict(row or ROW),
        format_args=FormatConfig(prompt_key="question", response_key="answer"),
        rollout_args=rollout_args or GenerationConfig(),
        workflow_args=workflow_args,
        repeat_times=repeat_times,
        reward_fn=reward_fn,
        is_eval=is_eval,
        task_id="t0",
    )


def run(task: ReinforgeTask, wrapper: ModelWrapper) -> tuple[Any, list[Any]]:
    workflow = task.to_workflow(wrapper)
    experiences = asyncio.run(workflow.run_async())
    return workflow, experiences


def direct_chat(wrapper: ModelWrapper, messages: list[dict[str, Any]]) -> Any:
    """What the model itself encodes and samples for ``messages`` (one reply)."""
    (exp,) = wrapper.chat(messages)
    return exp
