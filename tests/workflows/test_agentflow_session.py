"""AgentFlow rollouts record through the one recording path (docs/architecture.md).

Every rollout's endpoint is a session on the process's recording server, the one
black-box agents use, and what a rollout trains on is the history of its own
``ModelWrapper`` over the shared engine: rollouts running at once never see each
other's calls, and the rollout model's own history is left alone.
"""

from __future__ import annotations

import asyncio
import re

from openai import AsyncOpenAI

from reinforge.core import FormatConfig, GenerationConfig, Task
from reinforge.core.agentflow import AgentConfig
from reinforge.core.agentflow import Task as FlowTask
from reinforge.models import MockEngine, ModelWrapper
from reinforge.models.openai_api.recording import recording_server
from reinforge.workflows.agentflow import agentflow_workflow

SEEN_URLS: list[str] = []


async def uid_flow(task: FlowTask, config: AgentConfig) -> None:
    """Three calls, each naming this rollout; the calls themselves are the trajectory."""
    SEEN_URLS.append(config.base_url)
    client = AsyncOpenAI(base_url=config.base_url, api_key="EMPTY")
    for turn in range(3):
        await asyncio.sleep(0)  # let the other rollouts' calls interleave with these
        content = f"rollout {config.session_uid} turn {turn}"
        await client.chat.completions.create(
            model=config.model, messages=[{"role": "user", "content": content}]
        )


def echo(prompt: str, index: int) -> str:
    found = re.search(r"rollout (\S+) turn (\d)", prompt)
    return f"reply to {found.group(1)} {found.group(2)}" if found else "?"


def test_rollouts_record_on_the_shared_server_each_in_its_own_history() -> None:
    model = ModelWrapper(MockEngine(replies=echo), enable_history=True)
    task = Task(
        workflow=agentflow_workflow(uid_flow),
        raw_task={"question": "q", "answer": "a"},
        format_args=FormatConfig(prompt_key="question", response_key="answer"),
        rollout_args=GenerationConfig(),
        workflow_args={"evaluator": lambda task, episode: 1.0},
        repeat_times=3,
        task_id="t7",
    )
    SEEN_URLS.clear()
    workflow = task.to_workflow(model)
    exps = asyncio.run(workflow.run_async())

    with recording_server().open(model.openai_service) as probe:
        root = probe.base_url.removesuffix("/v1")
    assert len(SEEN_URLS) == 3 and len(set(SEEN_URLS)) == 3
    assert all(url.startswith(f"{root}/sessions/reinforge-t7-") for url in SEEN_URLS)

    assert len(exps) == 9
    for exp in exps:  # each rollout's experiences are its own calls, in its order
        uid = f"t7:{exp.eid.run}"
        turn = exp.info["step_index"]
        ids = exp.tokens.tolist()
        prompt = model.tokenizer.decode(ids[: exp.prompt_length])
        assert f"rollout {uid} turn {turn}" in prompt
        assert f"reply to {uid} {turn}" in model.tokenizer.decode(ids[exp.prompt_length :])
    assert sorted((e.eid.run, e.info["step_index"]) for e in exps) == [
        (r, t) for r in range(3) for t in range(3)
    ]
    assert model.history == []  # the rollout model's own record is not the flow's
