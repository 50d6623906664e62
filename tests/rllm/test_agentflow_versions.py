"""AgentFlow sessions date each experience with the weights that sampled its calls.

A flow calls the policy over the recording gateway (loopback HTTP); the engine here
syncs right after each call is sampled, so a flow's two sequential calls are sampled
by versions 5 and 6 while the engine is at 7 when the workflow builds experiences.
The steps keep their calls' versions and each experience the oldest of its steps
(what ``trainer.max_staleness`` must count from).
"""

from __future__ import annotations

import asyncio
from typing import Any

from openai import AsyncOpenAI

import reinforge.rllm as rllm
from reinforge.core import FormatConfig, GenerationConfig
from reinforge.core import Task as ReinforgeTask
from reinforge.models import MockEngine, ModelWrapper
from reinforge.models.engine import SamplingParams
from reinforge.rllm.agentflow_runner import agentflow_workflow
from reinforge.rllm.types import AgentConfig, Episode, Step, Task, Trajectory


class SyncAfterEachRequest(MockEngine):
    """The mock engine with a weight sync landing right after each request is sampled."""

    def submit(self, prompt_ids: list[int], params: SamplingParams) -> Any:
        future = super().submit(prompt_ids, params)
        self.update_weights({}, version=self.model_version + 1)
        return future


@rllm.rollout(name="two-calls")
async def two_calls_flow(task: Task, config: AgentConfig) -> Episode:
    """Two sequential calls, each its own trajectory."""
    client = AsyncOpenAI(base_url=config.base_url, api_key="EMPTY")
    trajectories = []
    for name in ("first", "second"):
        messages = [{"role": "user", "content": f"{name}: {task.instruction}"}]
        response = await client.chat.completions.create(model=config.model, messages=messages)
        content = response.choices[0].message.content or ""
        step = Step(
            chat_completions=[*messages, {"role": "assistant", "content": content}],
            model_response=content,
            action=content,
        )
        trajectories.append(Trajectory(name=name, steps=[step], reward=1.0))
    return Episode(trajectories=trajectories)


def test_agentflow_experiences_keep_the_version_of_their_own_call() -> None:
    engine = SyncAfterEachRequest(replies="It is 42.")
    engine.update_weights({}, version=5)
    task = ReinforgeTask(
        workflow=agentflow_workflow(two_calls_flow),
        raw_task={"question": "What is 6 * 7?", "answer": "42"},
        format_args=FormatConfig(prompt_key="question", response_key="answer"),
        rollout_args=GenerationConfig(),
        workflow_args={},
        repeat_times=1,
        task_id="t0",
    )
    workflow = task.to_workflow(ModelWrapper(engine))
    exps = asyncio.run(workflow.run_async())

    (episode,) = workflow.episodes
    assert [t.steps[0].weight_version for t in episode.trajectories] == [5, 6]
    assert [e.info["trajectory_name"] for e in exps] == ["first", "second"]
    assert [e.info["model_version"] for e in exps] == [5, 6]
    assert engine.model_version == 7
