"""Two AgentFlow guarantees that binary evaluators and distinct replies cannot show.

- A graded evaluator's reward (0.25, 0.7: neither 0 nor 1) reaches every trajectory
  of its episode, and every experience made from them, as it is: the trajectory's
  reward is the evaluator's ``reward``, never its ``is_correct`` as 0/1.
- A step gets the recorded call whose reply *and* messages it holds: when two calls
  answered with the same text, the step's conversation decides which call's token
  ids it trains on, not the order of the calls.

Written against ``reinforge.rllm`` (the flows and evaluators the rLLM way) and run
on the mock engine through the recording gateway, as in ``test_agentflow.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from openai import AsyncOpenAI

import reinforge.rllm as rllm
from reinforge.core import FormatConfig, GenerationConfig
from reinforge.core import Task as ReinforgeTask
from reinforge.models import MockEngine, ModelWrapper
from reinforge.rllm.eval.types import EvalOutput
from reinforge.rllm.types import AgentConfig, Episode, Step, Task, Trajectory

ROW = {"question": "Rate this essay.", "answer": "n/a"}
#: the graded reward of each run (episode ids are ``task_id:run``), and whether correct
GRADES = {0: (0.25, False), 1: (0.7, True)}


def make_task(flow: Any, evaluator: Any, repeat_times: int) -> ReinforgeTask:
    return ReinforgeTask(
        workflow=rllm.agentflow_workflow(flow),
        raw_task=dict(ROW),
        format_args=FormatConfig(prompt_key="question", response_key="answer"),
        rollout_args=GenerationConfig(),
        workflow_args={"evaluator": evaluator},
        repeat_times=repeat_times,
        task_id="t0",
    )


def run(task: ReinforgeTask, wrapper: ModelWrapper) -> tuple[Any, list[Any]]:
    workflow = task.to_workflow(wrapper)
    return workflow, asyncio.run(workflow.run_async())


# ---- graded rewards ------------------------------------------------------------------------


@rllm.rollout(name="writer")
async def writer_and_critic_flow(task: Task, config: AgentConfig) -> Episode:
    """Two trajectories (a writer and a critic), one call each; no trajectory reward set,
    so both take the evaluator's."""
    client = AsyncOpenAI(base_url=config.base_url, api_key="EMPTY")
    trajectories = []
    for name in ("writer", "critic"):
        messages = [{"role": "user", "content": f"{name}: {task.instruction}"}]
        reply = await client.chat.completions.create(model=config.model, messages=messages)
        content = reply.choices[0].message.content or ""
        step = Step(chat_completions=messages, model_response=content)
        trajectories.append(Trajectory(name=name, steps=[step]))
    return Episode(trajectories=trajectories)


@rllm.evaluator
def graded_evaluator(task: dict, episode: Episode) -> EvalOutput:
    """A partial-credit grade per run: 0.25 (not correct) for run 0, 0.7 (correct) for run 1."""
    reward, correct = GRADES[int(episode.id.rsplit(":", 1)[1])]
    return EvalOutput(reward=reward, is_correct=correct)


def test_a_graded_reward_reaches_every_trajectory_and_experience_unchanged() -> None:
    wrapper = ModelWrapper(MockEngine(replies=["A fair essay."]))
    workflow, exps = run(make_task(writer_and_critic_flow, graded_evaluator, 2), wrapper)

    assert [e.id for e in workflow.episodes] == ["t0:0", "t0:1"]
    for run_index, episode in enumerate(workflow.episodes):
        reward, correct = GRADES[run_index]
        assert episode.is_correct is correct
        assert [t.name for t in episode.trajectories] == ["writer", "critic"]
        assert [t.reward for t in episode.trajectories] == [reward, reward]
    assert len(exps) == 4
    assert [(e.eid.run, e.info["trajectory_name"]) for e in exps] == [
        (0, "writer"), (0, "critic"), (1, "writer"), (1, "critic"),
    ]  # fmt: skip
    assert [e.reward for e in exps] == [0.25, 0.25, 0.7, 0.7]
    assert all(e.mask_reason is None and e.action_mask.any() for e in exps)


# ---- call matching -------------------------------------------------------------------------

SAME_REPLY = "Same answer."
QUESTIONS = ("First question: the capital of France?", "Second question: the capital of Peru?")


@rllm.rollout
async def same_reply_flow(task: Task, config: AgentConfig) -> Episode:
    """Two calls, different messages, the same reply text; the steps returned in the
    opposite order of the calls, each holding its own conversation."""
    client = AsyncOpenAI(base_url=config.base_url, api_key="EMPTY")
    steps = []
    for question in QUESTIONS:
        messages = [{"role": "user", "content": question}]
        reply = await client.chat.completions.create(model=config.model, messages=messages)
        content = reply.choices[0].message.content or ""
        assert content == SAME_REPLY
        chat = [*messages, {"role": "assistant", "content": content}]
        steps.append(Step(chat_completions=chat, model_response=content))
    return Episode(
        trajectories=[
            Trajectory(name="second", steps=[steps[1]]),
            Trajectory(name="first", steps=[steps[0]]),
        ]
    )


def test_calls_with_the_same_reply_go_to_the_steps_holding_their_messages() -> None:
    wrapper = ModelWrapper(MockEngine(replies=[SAME_REPLY]))
    workflow, exps = run(make_task(same_reply_flow, graded_evaluator, 2), wrapper)

    # the token ids the model itself gives each question's conversation
    reference = {q: wrapper.chat([{"role": "user", "content": q}])[0] for q in QUESTIONS}
    assert reference[QUESTIONS[0]].tokens.tolist() != reference[QUESTIONS[1]].tokens.tolist()
    for episode in workflow.episodes:  # each run's session holds its own two calls
        assert episode.metrics["agentflow/calls"] == 2.0
        assert episode.metrics["agentflow/unclaimed_calls"] == 0.0
        for traj in episode.trajectories:
            (step,) = traj.steps
            question = step.chat_completions[0]["content"]
            assert question == QUESTIONS[traj.name == "second"]
            assert step.prompt_ids + step.response_ids == reference[question].tokens.tolist()
    assert len(exps) == 4
    assert [e.info["trajectory_name"] for e in exps] == ["second", "first"] * 2
    for exp, question in zip(exps, [QUESTIONS[1], QUESTIONS[0]] * 2, strict=True):
        assert exp.response_text == SAME_REPLY
        assert exp.tokens.tolist() == reference[question].tokens.tolist(), question
        assert exp.prompt_length == reference[question].prompt_length
