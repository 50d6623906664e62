"""rLLM 0.3's AgentFlow API under ``reinforge.rllm``, used as rLLM's docs and cookbooks use it.

Flows are written the rLLM way (``@rllm.rollout``, ``AsyncOpenAI(base_url=config.base_url,
api_key="EMPTY")``, ``Episode`` / ``Trajectory`` / ``Step`` from ``reinforge.rllm.types``)
and run as reinforge workflows on the mock engine, through the recording gateway over
loopback HTTP. The checks here: the decorators, the episode a flow produces and the
experiences it becomes (token ids equal to what the model itself encodes and samples for
the same messages, response masks, rewards per trajectory). Errors and call recording:
``test_agentflow_failures_and_calls.py``; the flows: ``agentflow_cookbook_flows.py``.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from agentflow_cookbook_flows import (
    N_SOLUTIONS,
    ROW,
    MathAgentFlow,
    boxed_evaluator,
    direct_chat,
    gateway_only_flow,
    make_task,
    math_flow,
    model,
    run,
    solver_judge_evaluator,
    solver_judge_flow,
    solver_judge_replies,
    sync_docs_flow,
)
from openai import AsyncOpenAI, OpenAI

import reinforge.rllm as rllm
from reinforge.core import GenerationConfig
from reinforge.rllm.agentflow_runner import AgentFlowWorkflow, agentflow_workflow
from reinforge.rllm.eval.rollout_decorator import AgentFlowFn, EvaluatorFn
from reinforge.rllm.eval.types import EvalOutputError
from reinforge.rllm.types import (
    AgentConfig,
    AgentFlow,
    AgentFlowReturnError,
    Episode,
    Evaluator,
    Step,
    Task,
    Trajectory,
    run_agent_flow,
)
from reinforge.workflows import WORKFLOWS

# ---- @rllm.rollout and @rllm.evaluator ---------------------------------------------------


def _task() -> Task:
    return Task(id="t", instruction="What is 2 + 2?", metadata={"answer": "4"})


def _config() -> AgentConfig:
    return AgentConfig(base_url="http://127.0.0.1:1/v1", model="m", session_uid="t:0")


class TestRolloutDecorator:
    def test_bare_decorator_makes_an_agent_flow(self) -> None:
        @rllm.rollout
        def flow(task, config):
            return None

        assert isinstance(flow, AgentFlowFn)
        assert isinstance(flow, AgentFlow)
        episode = flow.run(_task(), _config())
        assert isinstance(episode, Episode)
        assert [t.name for t in episode.trajectories] == ["solver"]
        assert episode.trajectories[0].steps == []
        assert episode.task == {"answer": "4"}
        assert episode.artifacts == {}

    def test_name_and_trajectory_return(self) -> None:
        @rllm.rollout(name="reasoning")
        async def flow(task, config):
            return Trajectory(output="four")

        episode = asyncio.run(flow.arun(_task(), _config()))
        assert episode.trajectories[0].name == "reasoning"
        assert episode.trajectories[0].output == "four"
        assert flow(_task(), _config()).trajectories[0].name == "reasoning"
        assert "AgentFlowFn" in repr(flow) and "flow" in repr(flow)

    def test_register_makes_a_named_workflow(self) -> None:
        @rllm.rollout(register="test_agentflow_registered")
        async def flow(task, config):
            return None

        cls = WORKFLOWS.get("test_agentflow_registered")
        assert issubclass(cls, AgentFlowWorkflow)
        assert cls.agent_flow is flow
        assert cls is agentflow_workflow(flow)  # cached

    def test_a_flow_returning_a_dict_is_an_error_naming_it(self) -> None:
        @rllm.rollout
        def broken_flow(task, config):
            return {"answer": "4"}

        with pytest.raises(AgentFlowReturnError, match=r"broken_flow returned a dict"):
            broken_flow.run(_task(), _config())

    def test_an_episode_of_wrong_things_is_an_error_naming_the_field(self) -> None:
        @rllm.rollout
        def sloppy_flow(task, config):
            return Episode(trajectories=[Trajectory(steps=[{"content": "4"}])])

        with pytest.raises(
            AgentFlowReturnError, match=r"sloppy_flow.*trajectories\[0\]\.steps\[0\]"
        ):
            sloppy_flow.run(_task(), _config())

    def test_run_agent_flow_takes_classes_and_plain_functions(self) -> None:
        class Flow:
            name = "cls"

            async def arun(self, task, config):
                return Trajectory()

        def plain(task, config):
            return Episode(trajectories=[Trajectory(name="p")])

        ep = asyncio.run(run_agent_flow(Flow(), _task(), _config()))
        assert [t.name for t in ep.trajectories] == ["cls"]
        ep = asyncio.run(run_agent_flow(plain, _task(), _config()))
        assert [t.name for t in ep.trajectories] == ["p"]
        with pytest.raises(ValueError, match="sandboxes"):
            asyncio.run(run_agent_flow(plain, _task(), _config(), env=object()))


class TestEvaluatorDecorator:
    @pytest.mark.parametrize(
        ("returned", "reward", "correct"),
        [
            (True, 1.0, True),
            (False, 0.0, False),
            (0.5, 0.5, True),
            (0, 0.0, False),
            ((0.2, False), 0.2, False),
        ],
    )
    def test_short_forms(self, returned: Any, reward: float, correct: bool) -> None:
        @rllm.evaluator
        def ev(task, episode):
            return returned

        assert isinstance(ev, EvaluatorFn) and isinstance(ev, Evaluator)
        out = ev.evaluate({}, Episode())
        assert (out.reward, out.is_correct) == (reward, correct)

    def test_anything_else_is_an_error_naming_it(self) -> None:
        @rllm.evaluator(register="ignored")
        def wordy_evaluator(task, episode):
            return "correct"

        with pytest.raises(EvalOutputError, match="wordy_evaluator returned a str"):
            wordy_evaluator({}, Episode())


# ---- flows run as reinforge workflows ----------------------------------------------------


def test_a_math_flow_becomes_token_exact_experiences() -> None:
    wrapper = model()
    task = make_task(math_flow, evaluator=boxed_evaluator)
    workflow, exps = run(task, wrapper)

    assert len(exps) == 2 and len(workflow.episodes) == 2
    episode = workflow.episodes[0]
    assert episode.id == "t0:0" and episode.task == ROW
    assert episode.artifacts["answer"] == "The answer is \\boxed{42}."
    assert episode.is_correct and episode.termination_reason.value == "env_done"
    assert episode.metrics["boxed"] == 1.0 and episode.metrics["n_boxed"] == 1.0
    assert "note" not in episode.metrics
    (traj,) = episode.trajectories
    assert traj.name == "math" and traj.reward == 1.0 and traj.signals == {"boxed": 1.0}

    messages = traj.steps[0].chat_completions[:2]
    reference = direct_chat(wrapper, messages)
    for run_index, exp in enumerate(exps):
        assert exp.tokens.tolist() == reference.tokens.tolist()
        assert exp.prompt_length == reference.prompt_length
        assert exp.logprobs.tolist() == pytest.approx(reference.logprobs.tolist())
        assert exp.action_mask.tolist() == [True] * (len(exp.tokens) - exp.prompt_length)
        assert exp.reward == 1.0 and exp.mask_reason is None
        assert exp.eid.run == run_index
        assert exp.info["trajectory_name"] == "math" and exp.info["is_correct"]
        assert exp.metrics["accuracy"] == 1.0
        assert exp.response_text == "The answer is \\boxed{42}."
    step = traj.steps[0]
    assert step.prompt_ids + step.response_ids == reference.tokens.tolist()
    assert step.model_output is not None and step.model_output.finish_reason == "stop"


def test_a_wrong_answer_gets_reward_zero() -> None:
    task = make_task(
        math_flow, row={"question": "What is 6 * 7?", "answer": "41"}, evaluator=boxed_evaluator
    )
    workflow, exps = run(task, model())
    assert [e.reward for e in exps] == [0.0, 0.0]
    assert not workflow.episodes[0].is_correct
    assert [e.metrics["accuracy"] for e in exps] == [0.0, 0.0]


def test_solver_judge_trajectories_keep_their_own_rewards() -> None:
    wrapper = model(replies=solver_judge_replies)
    task = make_task(solver_judge_flow, evaluator=solver_judge_evaluator, repeat_times=1)
    workflow, exps = run(task, wrapper)

    (episode,) = workflow.episodes
    assert [t.name for t in episode.trajectories] == ["solver", "solver", "judge"]
    assert [t.reward for t in episode.trajectories] == [0.0, 1.0, 1.0]
    assert episode.artifacts["answer"] == "It is \\boxed{42}." and episode.is_correct
    assert len(exps) == N_SOLUTIONS + 1
    assert [e.info["trajectory_name"] for e in exps] == ["solver", "solver", "judge"]
    assert [e.reward for e in exps] == [0.0, 1.0, 1.0]
    # the parallel solver calls went to the steps whose text they produced
    for traj, exp in zip(episode.trajectories, exps, strict=True):
        step = traj.steps[0]
        assert exp.response_text == step.model_response
        reference = direct_chat(wrapper, step.chat_completions[:1])
        assert exp.tokens.tolist() == reference.tokens.tolist()
    assert episode.metrics["agentflow/calls"] == 3.0
    assert episode.metrics["agentflow/unclaimed_calls"] == 0.0


def test_a_flow_returning_none_is_filled_from_the_recorded_calls() -> None:
    wrapper = model()
    task = make_task(gateway_only_flow, reward_fn="math_boxed_reward", repeat_times=1)
    workflow, exps = run(task, wrapper)

    (episode,) = workflow.episodes
    (traj,) = episode.trajectories
    assert traj.name == "solver" and len(traj.steps) == 2
    assert [e.info["step_index"] for e in exps] == [0, 1]
    second = traj.steps[1].chat_completions
    assert [m["role"] for m in second] == ["user", "assistant", "user", "assistant"]
    reference = direct_chat(wrapper, second[:3])
    assert exps[1].tokens.tolist() == reference.tokens.tolist()
    assert exps[1].prompt_length == reference.prompt_length
    # the reward function scored the last reply against the row's answer
    assert traj.reward > 0 and all(e.reward == traj.reward for e in exps)
    assert episode.is_correct


def test_the_docs_sync_flow_is_claimed_by_its_output_text() -> None:
    wrapper = model()
    for flow in (sync_docs_flow, MathAgentFlow()):
        task = make_task(agentflow_workflow(flow), reward_fn="math_boxed_reward", repeat_times=1)
        workflow, (exp,) = run(task, wrapper)
        step = workflow.episodes[0].trajectories[0].steps[0]
        assert step.output == "The answer is \\boxed{42}."
        assert step.has_tokens and step.model_response == step.output
        assert (
            exp.tokens.tolist()
            == direct_chat(wrapper, [{"role": "user", "content": ROW["question"]}]).tokens.tolist()
        )
        assert exp.reward > 0


def test_the_taskset_sampling_settings_win_over_the_flows() -> None:
    @rllm.rollout
    async def greedy_flow(task, config):
        client = AsyncOpenAI(base_url=config.base_url, api_key="EMPTY")
        for _ in range(2):
            await client.chat.completions.create(
                model=config.model,
                messages=[{"role": "user", "content": task.instruction}],
                temperature=0.0,
                max_tokens=3,
            )
        assert config.sampling_params["temperature"] == 0.7
        return None

    wrapper = model()
    args = GenerationConfig(temperature=0.7, max_tokens=9, seed=5)
    task = make_task(greedy_flow, reward_fn="math_boxed_reward", rollout_args=args)
    run(task, wrapper)
    params = wrapper.engine.params
    assert len(params) == 4
    assert {p.temperature for p in params} == {0.7}
    assert {p.max_tokens for p in params} == {9}
    assert len({p.seed for p in params}) == 4  # per rollout and per call


def test_config_carries_the_session_and_extra_workflow_args() -> None:
    seen: list[AgentConfig] = []

    @rllm.rollout
    def peek_flow(task, config):
        seen.append(config)
        return Trajectory(steps=[Step(model_response="nothing sampled")])

    task = make_task(
        peek_flow, evaluator=boxed_evaluator, is_eval=True, max_turns=3, tools={"a": 1}
    )
    _, exps = run(task, model())
    assert sorted(c.session_uid for c in seen) == ["t0:0", "t0:1"]
    assert all(c.metadata == {"max_turns": 3, "tools": {"a": 1}} and c.is_validation for c in seen)
    assert all(re.fullmatch(r"http://127\.0\.0\.1:\d+/sessions/[^/]+/v1", c.base_url) for c in seen)
    # no call was made, so no step has ids and nothing is trained on
    assert exps == []
    # the session is closed once the rollout ends
    client = OpenAI(base_url=seen[0].base_url, api_key="EMPTY", max_retries=0)
    with pytest.raises(Exception, match=r"401|names no running task"):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
