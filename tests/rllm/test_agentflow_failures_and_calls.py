"""AgentFlow flows that break the contract (raise, time out, return the wrong thing,
misconfigured), evaluators that ask for the row or the task, and the recording of
calls: steps matched to the call that produced them, streamed and text completions.
Flows and helpers: ``agentflow_cookbook_flows.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agentflow_cookbook_flows import (
    ROW,
    boxed_evaluator,
    direct_chat,
    make_task,
    math_flow,
    model,
    run,
)
from openai import AsyncOpenAI

import reinforge.rllm as rllm
from reinforge.rllm.agentflow_runner import AgentFlowWorkflow, agentflow_workflow
from reinforge.rllm.eval.types import EvalOutput, EvalOutputError
from reinforge.rllm.types import (
    AgentFlowReturnError,
    Episode,
    Step,
    Task,
    Trajectory,
)


def test_a_flow_that_raises_ends_masked_as_an_error() -> None:
    @rllm.rollout
    async def crashing_flow(task, config):
        client = AsyncOpenAI(base_url=config.base_url, api_key="EMPTY")
        await client.chat.completions.create(
            model=config.model, messages=[{"role": "user", "content": "x"}]
        )
        raise RuntimeError("the tool broke")

    workflow, exps = run(make_task(crashing_flow, evaluator=boxed_evaluator), model())
    assert [e.termination_reason.value for e in workflow.episodes] == ["error", "error"]
    assert "the tool broke" in workflow.episodes[0].info["error"]["error_message"]
    assert len(exps) == 2 and all(e.mask_reason.startswith("error: episode t0:") for e in exps)
    assert all(e.reward is None and e.tokens.numel() > e.prompt_length for e in exps)

    # rLLM's way: an errored rollout is trained on with reward 0
    task = make_task(
        crashing_flow, evaluator=boxed_evaluator, conversion={"mask_termination_reasons": []}
    )
    workflow, exps = run(task, model())
    assert len(exps) == 2 and all(e.mask_reason is None and e.reward == 0.0 for e in exps)
    assert (
        exps[0].tokens.tolist()
        == direct_chat(model(), [{"role": "user", "content": "x"}]).tokens.tolist()
    )


def test_a_flow_past_its_timeout_ends_masked() -> None:
    @rllm.rollout
    async def slow_flow(task, config):
        await asyncio.sleep(5)

    workflow, exps = run(make_task(slow_flow, evaluator=boxed_evaluator, timeout=0.2), model())
    assert [e.termination_reason.value for e in workflow.episodes] == ["timeout", "timeout"]
    assert all(e.mask_reason.startswith("timeout") for e in exps)


def test_a_flow_returning_the_wrong_thing_fails_the_task_naming_it() -> None:
    @rllm.rollout
    async def stringly_flow(task, config):
        return "42"

    with pytest.raises(AgentFlowReturnError, match="stringly_flow returned a str"):
        run(make_task(stringly_flow, evaluator=boxed_evaluator), model())


def test_an_evaluator_returning_the_wrong_thing_fails_the_task_naming_it() -> None:
    @rllm.evaluator
    def vague_evaluator(task, episode):
        return {"reward": 1}

    with pytest.raises(EvalOutputError, match="vague_evaluator returned a dict"):
        run(make_task(math_flow, evaluator=vague_evaluator), model())


def test_an_evaluator_that_raises_fails_the_task_naming_flow_and_evaluator() -> None:
    @rllm.evaluator
    def keyed_evaluator(task, episode):
        return task["no_such_key"]

    with pytest.raises(
        RuntimeError,
        match=r"math_flow: evaluator .*keyed_evaluator failed on episode t0:\d: KeyError",
    ):
        run(make_task(math_flow, evaluator=keyed_evaluator), model())


def test_evaluators_get_the_row_or_the_task_as_they_ask() -> None:
    got: dict[str, Any] = {}

    @rllm.evaluator
    def row_evaluator(task, episode):
        got["decorated"] = task
        return 1.0

    class TaskEvaluator:
        def evaluate(self, task: Task, episode: Episode) -> EvalOutput:
            got["class"] = task
            return EvalOutput(reward=1.0, is_correct=True)

    def plain_evaluator(task_info, episode):
        got["plain"] = task_info
        return 1.0

    for ev in (row_evaluator, TaskEvaluator(), plain_evaluator):
        run(make_task(math_flow, evaluator=ev, repeat_times=1), model())
    assert got["decorated"] == ROW and got["plain"] == ROW
    assert isinstance(got["class"], Task)
    assert got["class"].metadata == ROW and got["class"].instruction == ROW["question"]
    assert got["class"].id == "t0"


def test_configuration_errors_name_the_flow_and_the_field() -> None:
    # (no evaluator at all is not an error: tests/rllm/test_agentflow_no_evaluator.py)
    with pytest.raises(ValueError, match=r"workflow_args\.evaluator: 'no\.such\.evaluator'"):
        make_task(math_flow, evaluator="no.such.evaluator").to_workflow(model())
    with pytest.raises(ValueError, match=r"math_flow: workflow_args\.timeout must be a positive"):
        make_task(math_flow, evaluator=boxed_evaluator, timeout="soon").to_workflow(model())
    with pytest.raises(ValueError, match=r"math_flow: workflow_args\.conversion: unknown"):
        make_task(math_flow, evaluator=boxed_evaluator, conversion={"rewards": "step"}).to_workflow(
            model()
        )
    with pytest.raises(
        ValueError, match=r"workflow_args\.agent_flow.*needs the flow|needs the flow"
    ):
        make_task(AgentFlowWorkflow, evaluator=boxed_evaluator).to_workflow(model())
    with pytest.raises(ValueError, match=r"workflow_args\.agent_flow: module 'json' has no 'nope'"):
        make_task(AgentFlowWorkflow, evaluator=boxed_evaluator, agent_flow="json.nope").to_workflow(
            model()
        )
    with pytest.raises(ValueError, match="not both"):
        make_task(math_flow, evaluator=boxed_evaluator, agent_flow="json.dumps").to_workflow(
            model()
        )

    class SandboxFlow:
        needs_env = True

        def run(self, task, config, *, env):
            return None

    with pytest.raises(ValueError, match="needs a sandbox"):
        agentflow_workflow(SandboxFlow())


def test_steps_get_the_call_that_produced_them_whatever_their_order() -> None:
    @rllm.rollout
    async def backwards_flow(task, config):
        client = AsyncOpenAI(base_url=config.base_url, api_key="EMPTY")
        steps = []
        for question in ("What is 1 + 1?", "What is 2 + 5?"):
            messages = [{"role": "user", "content": question}]
            reply = await client.chat.completions.create(model=config.model, messages=messages)
            content = reply.choices[0].message.content
            steps.append(Step(chat_completions=messages, model_response=content))
        # the later call's step first: claimed by text, not by position
        return Episode(
            trajectories=[
                Trajectory(name="b", steps=[steps[1]]),
                Trajectory(name="a", steps=[steps[0]]),
            ]
        )

    wrapper = model()
    _, exps = run(make_task(backwards_flow, evaluator=boxed_evaluator, repeat_times=1), wrapper)
    assert [e.response_text for e in exps] == [
        "The answer is \\boxed{7}.",
        "The answer is \\boxed{2}.",
    ]
    later = direct_chat(wrapper, [{"role": "user", "content": "What is 2 + 5?"}])
    assert exps[0].tokens.tolist() == later.tokens.tolist()


def test_streamed_chats_and_text_completions_are_recorded_too() -> None:
    @rllm.rollout
    async def streaming_flow(task, config):
        client = AsyncOpenAI(base_url=config.base_url, api_key="EMPTY")
        stream = await client.chat.completions.create(
            model=config.model,
            messages=[{"role": "user", "content": task.instruction}],
            stream=True,
        )
        text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        completion = await client.completions.create(model=config.model, prompt="What is 2 + 2?")
        steps = [Step(model_response=text), Step(output=completion.choices[0].text)]
        return Episode(trajectories=[Trajectory(steps=steps)], artifacts={"answer": text})

    wrapper = model()
    _, exps = run(make_task(streaming_flow, evaluator=boxed_evaluator, repeat_times=1), wrapper)
    assert [e.response_text for e in exps] == [
        "The answer is \\boxed{42}.",
        "The answer is \\boxed{4}.",
    ]
    assert (
        exps[0].tokens.tolist()
        == direct_chat(wrapper, [{"role": "user", "content": ROW["question"]}]).tokens.tolist()
    )
    (reference,) = wrapper.generate(["What is 2 + 2?"])
    assert exps[1].tokens.tolist() == reference.tokens.tolist()
    assert [e.reward for e in exps] == [1.0, 1.0]
