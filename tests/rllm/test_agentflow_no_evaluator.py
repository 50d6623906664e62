"""An AgentFlow with no evaluator keeps the rewards its episode carries, as rLLM reads them.

rLLM fills only the trajectory rewards its evaluator leaves unset, and its trainer
gives a trajectory still without one its last step's reward (the ``broadcast``
transform; a reward never set counts 0). A flow that scores itself (rewards on its
trajectories or steps) therefore needs no evaluator: under reinforge, a taskset that
names neither ``workflow_args.evaluator`` nor ``default_reward_fn_type`` trains on
those rewards instead of failing every task.

Flows are written the rLLM way and run on the mock engine through the recording
endpoint, as in ``test_agentflow.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from openai import AsyncOpenAI

import reinforge.rllm as rllm
from reinforge.core import FormatConfig, GenerationConfig
from reinforge.core import Task as ReinforgeTask
from reinforge.models import MockEngine, ModelWrapper
from reinforge.rllm.types import AgentConfig, Episode, Step, Task, Trajectory

ROW = {"question": "Plan a trip.", "answer": "n/a"}


async def _ask(config: AgentConfig, content: str) -> tuple[list[dict[str, Any]], str]:
    client = AsyncOpenAI(base_url=config.base_url, api_key="EMPTY")
    messages = [{"role": "user", "content": content}]
    reply = await client.chat.completions.create(model=config.model, messages=messages)
    return messages, reply.choices[0].message.content or ""


@rllm.rollout(name="planner")
async def self_scoring_flow(task: Task, config: AgentConfig) -> Episode:
    """A planner scored as a whole (trajectory reward 0.3) and a critic scored step by
    step (0.2, then 0.9, no trajectory reward); the flow says whether it succeeded."""
    messages, content = await _ask(config, f"plan: {task.instruction}")
    planner = Trajectory(
        name="planner",
        steps=[Step(chat_completions=messages, model_response=content)],
        reward=0.3,
    )
    critic = Trajectory(name="critic")
    for turn, reward in (("first", 0.2), ("second", 0.9)):
        messages, content = await _ask(config, f"critique ({turn}): {task.instruction}")
        critic.steps.append(Step(chat_completions=messages, model_response=content, reward=reward))
    return Episode(trajectories=[planner, critic], is_correct=True)


@rllm.rollout(name="silent")
async def unscored_flow(task: Task, config: AgentConfig) -> None:
    """rLLM's 'return None' form with nothing scored: its calls train with reward 0."""
    await _ask(config, task.instruction)


def make_task(flow: Any, repeat_times: int = 2) -> ReinforgeTask:
    """A taskset row naming no evaluator and no reward function."""
    return ReinforgeTask(
        workflow=rllm.agentflow_workflow(flow),
        raw_task=dict(ROW),
        format_args=FormatConfig(prompt_key="question", response_key="answer"),
        rollout_args=GenerationConfig(),
        repeat_times=repeat_times,
        task_id="t0",
    )


def run(task: ReinforgeTask) -> tuple[Any, list[Any]]:
    workflow = task.to_workflow(ModelWrapper(MockEngine(replies=["A plan."])))
    return workflow, asyncio.run(workflow.run_async())


def test_a_flow_without_an_evaluator_keeps_the_rewards_it_carries() -> None:
    workflow, exps = run(make_task(self_scoring_flow))

    assert workflow.evaluator is None
    for episode in workflow.episodes:
        rewards = {t.name: t.reward for t in episode.trajectories}
        # the planner's own reward stays; the critic takes its last step's, not the sum
        assert rewards == {"planner": 0.3, "critic": 0.9}
        assert episode.is_correct is True  # as the flow set it
        assert episode.termination_reason.value == "env_done"
    assert len(exps) == 2 * 3  # every step of both runs, each with its call's ids
    assert all(e.tokens.numel() > e.prompt_length for e in exps)
    by_run = sorted((e.eid.run, e.info["trajectory_name"], e.reward) for e in exps)
    assert by_run == [
        (0, "critic", 0.9),
        (0, "critic", 0.9),
        (0, "planner", 0.3),
        (1, "critic", 0.9),
        (1, "critic", 0.9),
        (1, "planner", 0.3),
    ]


def test_a_flow_that_scores_nothing_gets_reward_zero() -> None:
    workflow, exps = run(make_task(unscored_flow, repeat_times=1))

    (episode,) = workflow.episodes
    assert [t.reward for t in episode.trajectories] == [0.0]
    assert episode.is_correct is False
    assert len(exps) == 1 and exps[0].reward == 0.0
