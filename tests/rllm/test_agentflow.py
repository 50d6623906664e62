"""rLLM 0.3's AgentFlow API under ``reinforge.rllm``, used as rLLM's docs and cookbooks use it.

Flows are written the rLLM way (``@rllm.rollout``, ``AsyncOpenAI(base_url=config.base_url,
api_key="EMPTY")``, ``Episode`` / ``Trajectory`` / ``Step`` from ``reinforge.rllm.types``)
and run as reinforge workflows on the mock engine, through the recording gateway over
loopback HTTP. The checks: the episode a flow produces, the experiences it becomes
(token ids equal to what the model itself encodes and samples for the same messages,
response masks, rewards per trajectory), and the errors for what breaks the contract.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from openai import AsyncOpenAI, OpenAI

import reinforge.rllm as rllm
from reinforge.core import FormatConfig, GenerationConfig
from reinforge.core import Task as ReinforgeTask
from reinforge.models import MockEngine, ModelWrapper
from reinforge.rllm.agentflow_runner import AgentFlowWorkflow, agentflow_workflow
from reinforge.rllm.eval.rollout_decorator import AgentFlowFn, EvaluatorFn
from reinforge.rllm.eval.types import EvalOutput, EvalOutputError, Signal
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
