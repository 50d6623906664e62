"""Episode workflows: rLLM-style code run on reinforge, directly and through the explorer.

The example is a guess-the-number game: the environment holds a target, the agent
guesses, the environment answers "higher"/"lower" until the guess is right. The
mock policy guesses 1, 2, 3, ... (one more than its previous guesses in the prompt).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from typing import Any

import pytest

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.buffer.pipeline import ExperiencePipeline
from reinforge.config import config_from_dict
from reinforge.core import Experience, FormatConfig, GenerationConfig, Task
from reinforge.explorer import Explorer
from reinforge.models import MockEngine, ModelWrapper
from reinforge.workflows import WORKFLOWS
from reinforge.workflows import Workflow as ReinforgeWorkflow
from reinforge.workflows.episode import (
    Action,
    BaseAgent,
    BaseEnv,
    ConversionOptions,
    Episode,
    EpisodeWorkflow,
    EpisodeWorkflowAdapter,
    ModelWrapperEngine,
    Step,
    TerminationEvent,
    TerminationReason,
    Trajectory,
    Workflow,
    episode_to_experiences,
)

# ---- the example: an rLLM-style agent, env and workflow ---------------------------------


def count_guesses(prompt_text: str) -> int:
    """Assistant turns already in a ChatML prompt (the last one is the generation prompt)."""
    return prompt_text.count("<|im_start|>assistant\n") - 1


def guessing_policy(prompt_text: str, index: int) -> str:
    return str(count_guesses(prompt_text) + 1)


class RecordingEngine(MockEngine):
    """The mock policy, remembering every sampled completion (ids and logprobs)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(replies=guessing_policy, **kwargs)
        self.sampled: list[tuple[list[int], list[int], list[float]]] = []

    def submit(self, prompt_ids, params):
        fut = super().submit(prompt_ids, params)
        for comp in fut.result():
            self.sampled.append((list(prompt_ids), list(comp.token_ids), list(comp.logprobs)))
        return fut


class GuessEnv(BaseEnv):
    def __init__(self, explode_on_turn: int | None = None) -> None:
        self.target = 0
        self.turn = 0
        self.explode_on_turn = explode_on_turn

    def reset(self, task: dict | None = None) -> tuple[Any, dict]:
        self.target = int((task or {}).get("target", 0))
        self.turn = 0
        return "Guess my number (1-10).", {}

    def step(self, action: Any) -> tuple[Any, float, bool, dict]:
        self.turn += 1
        if self.explode_on_turn == self.turn:
            raise RuntimeError(f"the number machine broke on turn {self.turn}")
        match = re.search(r"-?\d+", str(action))
        guess = int(match.group()) if match else -1
        if guess == self.target:
            return "correct", 1.0, True, {"guess": guess}
        return ("higher" if guess < self.target else "lower"), 0.0, False, {"guess": guess}


class GuessAgent(BaseAgent):
    """Stores only the reply text, as many rLLM agents do (tokens are attached later)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._trajectory = Trajectory(name="guesser")
        self.messages: list[dict[str, Any]] = []

    @property
    def chat_completions(self) -> list[dict[str, Any]]:
        return self.messages

    @property
    def trajectory(self) -> Trajectory:
        return self._trajectory

    def update_from_env(self, observation, reward, done, info, **kwargs) -> None:
        if self._trajectory.steps:
            step = self._trajectory.steps[-1]
            step.reward, step.done = reward, done
            step.info.update(info)
        if not done:
            self.messages.append({"role": "user", "content": str(observation)})

    def update_from_model(self, response: str, **kwargs) -> Action:
        self.messages.append({"role": "assistant", "content": response})
        step = Step(chat_completions=self.messages, model_response=response, action=response)
        self._trajectory.steps.append(step)
        return Action(response)


class GuessWorkflow(Workflow):  # rLLM's ``class X(Workflow)``, imports changed only
    def __init__(self, max_turns: int = 4, explode_on_turn: int | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.agent = GuessAgent()
        self.env = GuessEnv(explode_on_turn)
        self.max_turns = max_turns

    async def run(self, task: dict, uid: str, **kwargs) -> Episode | None:
        self.reset(task=task, uid=uid)
        observation, info = self.env.reset(task)
        self.agent.update_from_env(observation, 0.0, False, info)
        for _ in range(self.max_turns):
            output = await self.rollout_engine.get_model_response(
                self.agent.chat_completions, application_id=uid, skip_special_tokens=True
            )
            action = self.agent.update_from_model(output.text)
            observation, reward, done, info = await self.run_in_executor(
                self.env.step, action.action
            )
            self.agent.update_from_env(observation, reward, done, info)
            if done:
                raise TerminationEvent(TerminationReason.ENV_DONE)
        raise TerminationEvent(TerminationReason.MAX_TURNS_EXCEEDED)


WORKFLOWS.register_module("test_guess_number_episode")(GuessWorkflow)


@WORKFLOWS.register_module("test_guess_attached_episode")
class AttachingGuessWorkflow(GuessWorkflow):
    """Same game; the workflow puts each ModelOutput on its step itself."""

    async def run(self, task: dict, uid: str, **kwargs) -> Episode | None:
        self.reset(task=task, uid=uid)
        observation, _ = self.env.reset(task)
        messages = [{"role": "user", "content": observation}]
        traj = Trajectory(name="guesser")
        for _ in range(self.max_turns):
            output = await self.rollout_engine.get_model_response(messages)
            step = Step.from_model_output(output, messages, action=output.content)
            traj.steps.append(step)
            observation, step.reward, step.done, _ = self.env.step(step.action)
            messages = [*step.chat_completions, {"role": "user", "content": observation}]
            if step.done:
                break
        self.commit(trajectory=traj)
        reason = TerminationReason.ENV_DONE if traj.steps[-1].done else TerminationReason.UNKNOWN
        raise TerminationEvent(reason)


@WORKFLOWS.register_module("test_hanging_episode")
class HangsOnOddRuns(GuessWorkflow):
    """Plays one turn, then hangs forever on odd rollouts."""

    async def run(self, task: dict, uid: str, **kwargs) -> Episode | None:
        self.reset(task=task, uid=uid)
        observation, info = self.env.reset(task)
        self.agent.update_from_env(observation, 0.0, False, info)
        output = await self.rollout_engine.get_model_response(self.agent.chat_completions)
        action = self.agent.update_from_model(output.text)
        self.agent.update_from_env(*self.env.step(action.action))
        if int(uid.rpartition(":")[2]) % 2:
            await asyncio.Event().wait()
        raise TerminationEvent(TerminationReason.ENV_DONE)


@WORKFLOWS.register_module("test_always_hanging_episode")
class AlwaysHangs(GuessWorkflow):
    """Plays one turn, then hangs on every rollout: each episode times out."""

    async def run(self, task: dict, uid: str, **kwargs) -> Episode | None:
        self.reset(task=task, uid=uid)
        observation, info = self.env.reset(task)
        self.agent.update_from_env(observation, 0.0, False, info)
        output = await self.rollout_engine.get_model_response(self.agent.chat_completions)
        self.agent.update_from_model(output.text)
        await asyncio.Event().wait()


@WORKFLOWS.register_module("test_hanging_before_any_call_episode")
class HangsBeforeAnyCall(GuessWorkflow):
    """Times out before its first model call: the episode has no step with tokens."""

    async def run(self, task: dict, uid: str, **kwargs) -> Episode | None:
        self.reset(task=task, uid=uid)
        await asyncio.Event().wait()


def make_model(**kwargs: Any) -> ModelWrapper:
    return ModelWrapper(RecordingEngine(**kwargs))


def run_episode(workflow: EpisodeWorkflow, task: dict, uid: str = "0:0") -> Episode:
    return asyncio.run(workflow.run_with_termination_handling(task, uid))


def guess_workflow(model: ModelWrapper | None = None, **kwargs: Any) -> GuessWorkflow:
    return GuessWorkflow(rollout_engine=ModelWrapperEngine(model or make_model()), **kwargs)


# ---- termination reasons ----------------------------------------------------------------


def test_env_done_episode() -> None:
    episode = run_episode(guess_workflow(), {"target": 3}, uid="5:2")
    assert episode.termination_reason is TerminationReason.ENV_DONE
    assert episode.id == "5:2" and episode.task == {"target": 3}
    (traj,) = episode.trajectories
    assert traj.name == "guesser"
    assert [s.model_response for s in traj.steps] == ["1", "2", "3"]
    assert [s.reward for s in traj.steps] == [0.0, 0.0, 1.0]
    assert traj.reward == 1.0 and episode.is_correct
    assert episode.metrics == {"guesser_acc": 1.0}
    assert all(s.has_tokens for s in traj.steps)  # attached from the engine's calls


def test_max_turns_exceeded() -> None:
    episode = run_episode(guess_workflow(max_turns=2), {"target": 9})
    assert episode.termination_reason is TerminationReason.MAX_TURNS_EXCEEDED
    assert len(episode.trajectories[0].steps) == 2
    assert episode.trajectories[0].reward == 0.0 and not episode.is_correct


def test_timeout_keeps_the_partial_trajectory() -> None:
    wf = HangsOnOddRuns(rollout_engine=ModelWrapperEngine(make_model()), timeout=0.05)
    episode = run_episode(wf, {"target": 4}, uid="0:1")
    assert episode.termination_reason is TerminationReason.TIMEOUT
    assert [s.model_response for s in episode.trajectories[0].steps] == ["1"]
    assert "error" not in episode.info


def test_error_mid_episode_stores_the_traceback() -> None:
    episode = run_episode(guess_workflow(explode_on_turn=2), {"target": 9})
    assert episode.termination_reason is TerminationReason.ERROR
    error = episode.info["error"]
    assert error["error_type"] == "RuntimeError"
    assert error["error_message"] == "the number machine broke on turn 2"
    assert "Traceback" in error["traceback"] and "in step" in error["traceback"]
    # the step whose env call failed has its reply; both steps are kept
    assert [s.model_response for s in episode.trajectories[0].steps] == ["1", "2"]


def test_own_timeout_error_is_an_error_not_a_timeout() -> None:
    class RaisesTimeout(GuessWorkflow):
        async def run(self, task, uid, **kwargs):
            raise TimeoutError("the remote judge timed out")

    episode = run_episode(RaisesTimeout(rollout_engine=ModelWrapperEngine(make_model())), {})
    assert episode.termination_reason is TerminationReason.ERROR
    assert episode.info["error"]["error_message"] == "the remote judge timed out"


def test_plain_return_is_unknown_and_returned_episode_is_kept() -> None:
    class ReturnsNothing(GuessWorkflow):
        async def run(self, task, uid, **kwargs):
            return None

    class ReturnsEpisode(GuessWorkflow):
        async def run(self, task, uid, **kwargs):
            return Episode(is_correct=True, metrics={"mine": 1.0})

    engine = ModelWrapperEngine(make_model())
    assert (
        run_episode(ReturnsNothing(rollout_engine=engine), {}).termination_reason
        is TerminationReason.UNKNOWN
    )
    own = run_episode(ReturnsEpisode(rollout_engine=engine), {"t": 1}, uid="3:0")
    assert own.is_correct and own.metrics == {"mine": 1.0} and own.id == "3:0"
    assert own.termination_reason is TerminationReason.UNKNOWN and own.task == {"t": 1}


def test_max_prompt_length_ends_the_episode() -> None:
    engine = ModelWrapperEngine(make_model(), max_prompt_length=60)
    episode = run_episode(GuessWorkflow(rollout_engine=engine, max_turns=9), {"target": 9})
    assert episode.termination_reason is TerminationReason.MAX_PROMPT_LENGTH_EXCEEDED
    assert 0 < len(episode.trajectories[0].steps) < 9


# ---- rewards and correctness ------------------------------------------------------------


class Scripted(EpisodeWorkflow):
    """Commits one trajectory with the given step rewards."""

    def __init__(self, rewards: list[float], **kwargs: Any) -> None:
        super().__init__(rollout_engine=None, **kwargs)
        self.rewards = rewards

    async def run(self, task, uid, **kwargs):
        steps = [
            Step(prompt_ids=[1], response_ids=[2], chat_completions=[{"role": "user"}], reward=r)
            for r in self.rewards
        ]
        self.commit(name="solver", trajectory=Trajectory(steps=steps))
        raise TerminationEvent(TerminationReason.ENV_DONE)


def scripted(rewards: list[float], **kwargs: Any) -> tuple[float, list[float], list[float]]:
    episode = run_episode(Scripted(rewards, **kwargs), {})
    traj = episode.trajectories[0]
    return traj.reward, [s.reward for s in traj.steps], [s.mc_return for s in traj.steps]


def test_reward_adjustment_after_trajectory_reward_is_rllms_default() -> None:
    # bonus 0.5: [0, 0.5 + 0.5*0.5, 1 + 0.5*0.5] = [0, 0.75, 1.25]
    # gamma 0.5: G = [0 + 0.5*1.375, 0.75 + 0.5*1.25, 1.25] = [0.6875, 1.375, 1.25]
    reward, steps, returns = scripted([0.0, 0.5, 1.0], reward_bonus_coeff=0.5, gamma=0.5)
    assert reward == pytest.approx(1.5)  # the raw sum: the adjustment does not reach it
    assert steps == pytest.approx([0.6875, 1.375, 1.25])
    assert returns == pytest.approx([0.6875, 1.375, 1.25])
    assert scripted([0.0, 0.5, 1.0])[:2] == (1.5, [0.0, 0.5, 1.0])  # defaults change nothing


def test_reward_adjustment_before_trajectory_reward() -> None:
    reward, steps, _ = scripted(
        [0.0, 0.5, 1.0],
        reward_bonus_coeff=0.5,
        gamma=0.5,
        adjust_rewards_before_trajectory_reward=True,
    )
    assert steps == pytest.approx([0.6875, 1.375, 1.25])
    assert reward == pytest.approx(0.6875 + 1.375 + 1.25)
    bonus_only, _, _ = scripted(
        [0.0, 0.5, 1.0], reward_bonus_coeff=0.5, adjust_rewards_before_trajectory_reward=True
    )
    assert bonus_only == pytest.approx(0.0 + 0.75 + 1.25)
    # the bonus uses raw differences: a drop is penalised
    assert scripted([1.0, 0.0], reward_bonus_coeff=1.0)[1] == [1.0, -1.0]


@pytest.mark.parametrize(
    ("rewards", "correct"),
    [([0.0, 1.0], True), ([0.0, 0.0], False), ([1.0, -1.0], False), ([0.25], True)],
)
def test_episode_correctness_is_positive_total_reward(rewards, correct) -> None:
    episode = run_episode(Scripted(rewards), {})
    assert episode.is_correct is correct


def test_metrics_per_trajectory_name() -> None:
    class TwoRoles(EpisodeWorkflow):
        async def run(self, task, uid, **kwargs):
            for name, reward in [("solver", 1.0), ("solver", 0.0), ("judge", 1.0)]:
                step = Step(prompt_ids=[1], response_ids=[2], reward=reward)
                self.commit(name=name, trajectory=Trajectory(steps=[step]))

    episode = run_episode(TwoRoles(rollout_engine=None), {})
    assert episode.metrics == {"solver_acc": 0.5, "judge_acc": 1.0}
    assert episode.termination_reason is TerminationReason.UNKNOWN


def test_commit_takes_one_source_and_copies() -> None:
    wf = guess_workflow()
    with pytest.raises(ValueError, match="exactly one"):
        wf.commit()
    with pytest.raises(ValueError, match="exactly one"):
        wf.commit(agent=wf.agent, trajectory=Trajectory())
    wf.agent.update_from_model("4")
    wf.commit(name="first", agent=wf.agent, reset=True)
    assert wf.agent.trajectory.steps == []  # reset
    episode = wf.collect_trajectories()
    assert [t.name for t in episode.trajectories] == ["first"]
    wf.commit(trajectory=Trajectory())  # empty: skipped
    assert len(wf.collect_trajectories().trajectories) == 1


def test_reset_and_thread_safety_follow_agents_and_envs() -> None:
    wf = guess_workflow()
    wf.agent.update_from_model("1")
    wf.env.turn = 5
    wf.reset({"target": 8}, "9:0")
    assert (wf.uid, wf.task) == ("9:0", {"target": 8})
    assert wf.agent.trajectory.steps == [] and wf.agent.trajectory.task == {"target": 8}
    assert (wf.env.turn, wf.env.target) == (0, 8)
    assert wf.is_multithread_safe()

    class Unsafe(GuessEnv):
        @staticmethod
        def is_multithread_safe() -> bool:
            return False

    wf.env = Unsafe()
    assert not wf.is_multithread_safe()


# ---- conversion ---------------------------------------------------------------------------


def test_conversion_is_token_exact() -> None:
    model = make_model()
    episode = run_episode(guess_workflow(model), {"target": 3}, uid="12:4")
    exps = episode_to_experiences(episode)
    sampled = model.engine.sampled
    assert len(exps) == len(sampled) == 3
    for exp, (prompt_ids, completion_ids, logprobs) in zip(exps, sampled, strict=True):
        assert exp.tokens.tolist() == prompt_ids + completion_ids
        assert exp.prompt_length == len(prompt_ids)
        assert exp.logprobs.tolist() == pytest.approx(logprobs)
        assert bool(exp.action_mask.all())
    assert [e.eid.step for e in exps] == [0, 1, 2]
    assert {(e.eid.task, e.eid.run) for e in exps} == {("12", 4)}
    assert [e.reward for e in exps] == [1.0, 1.0, 1.0]  # trajectory reward on every step
    assert [e.info["step_reward"] for e in exps] == [0.0, 0.0, 1.0]
    info = exps[-1].info
    assert info["termination_reason"] == "env_done" and info["is_correct"] is True
    assert info["trajectory_name"] == "guesser" and info["episode_id"] == "12:4"
    assert info["finish_reason"] == "stop" and info["model_version"] == 0
    assert exps[-1].metrics == {"guesser_acc": 1.0, "accuracy": 1.0}
    assert exps[-1].response_text == "3"
    json.dumps(Experience.from_bytes(exps[-1].to_bytes()).info)  # storable


def test_attached_and_text_only_agents_give_the_same_tokens() -> None:
    text_only = run_episode(guess_workflow(), {"target": 3})
    attached = run_episode(
        AttachingGuessWorkflow(rollout_engine=ModelWrapperEngine(make_model())), {"target": 3}
    )
    a, b = episode_to_experiences(text_only), episode_to_experiences(attached)
    assert [e.tokens.tolist() for e in a] == [e.tokens.tolist() for e in b]


def test_step_reward_mode_and_steps_without_tokens() -> None:
    traj = Trajectory(
        steps=[
            Step(prompt_ids=[1, 2], response_ids=[3], reward=0.25),
            Step(model_response="never sampled", reward=5.0),
            Step(prompt_ids=[1, 2, 3, 4], response_ids=[5, 6], reward=0.75),
        ],
        reward=1.0,
    )
    episode = Episode(id="3:1", trajectories=[traj], termination_reason=TerminationReason.ENV_DONE)
    exps = episode_to_experiences(episode, {"reward": "step"})
    assert [e.reward for e in exps] == [0.25, 0.75]
    assert [e.info["step_index"] for e in exps] == [0, 2]
    assert [e.eid.step for e in exps] == [0, 1]
    with pytest.raises(ValueError, match="reward must be one of"):
        ConversionOptions(reward="episode")
    with pytest.raises(ValueError, match="unknown conversion option"):
        ConversionOptions.build({"rewards": "step"})


# ---- masking --------------------------------------------------------------------------------


def group_episode(run: int, reward: float, reason: TerminationReason) -> Episode:
    step = Step(prompt_ids=[1, 2], response_ids=[3, 4], logprobs=[-0.1, -0.2], reward=reward)
    traj = Trajectory(steps=[step], reward=reward)
    info = {"error": {"error_type": "RuntimeError"}} if reason is TerminationReason.ERROR else {}
    return Episode(
        id=f"7:{run}",
        trajectories=[traj],
        termination_reason=reason,
        is_correct=reward > 0,
        info=info,
    )


GROUP = [
    (1.0, TerminationReason.ENV_DONE),
    (0.0, TerminationReason.ENV_DONE),
    (1.0, TerminationReason.ENV_DONE),
    (0.0, TerminationReason.TIMEOUT),
    (0.0, TerminationReason.ERROR),
]


def advantages_of(options: dict[str, Any], operators: list[str]) -> tuple[dict, dict]:
    episodes = [group_episode(i, r, reason) for i, (r, reason) in enumerate(GROUP)]
    exps = [e for ep in episodes for e in episode_to_experiences(ep, options)]
    pipeline = ExperiencePipeline([{"name": n} for n in operators], on_error="raise")
    kept, metrics = asyncio.run(pipeline.process(exps))
    return {e.eid.run: float(e.advantages[0]) for e in kept}, metrics


def test_masked_episodes_are_dropped_and_leave_the_group_mean_alone() -> None:
    advantages, _ = advantages_of({}, ["group_advantage"])  # default: mask timeout, error
    assert sorted(advantages) == [0, 1, 2]
    # rewards [1, 0, 1]: mean 2/3, Bessel std sqrt(1/3)
    assert advantages[0] == pytest.approx((1 - 2 / 3) / math.sqrt(1 / 3), rel=1e-4)
    assert advantages[1] == pytest.approx((0 - 2 / 3) / math.sqrt(1 / 3), rel=1e-4)


def test_masked_episodes_as_invalid_rewards_are_filtered() -> None:
    advantages, metrics = advantages_of(
        {"masked": "invalid_reward"}, ["invalid_reward_filter", "group_advantage"]
    )
    assert sorted(advantages) == [0, 1, 2]
    assert advantages[0] == pytest.approx((1 - 2 / 3) / math.sqrt(1 / 3), rel=1e-4)
    assert metrics["invalid_reward_filter/none"] == 2.0
    episode = group_episode(3, 0.0, TerminationReason.TIMEOUT)
    (exp,) = episode_to_experiences(episode, {"masked": "invalid_reward"})
    assert exp.reward is None and exp.info["masked"] is True
    assert exp.info["termination_reason"] == "timeout"


def test_without_masking_failures_count_as_zero() -> None:
    advantages, _ = advantages_of({"mask_termination_reasons": []}, ["group_advantage"])
    assert sorted(advantages) == [0, 1, 2, 3, 4]
    mean, std = 0.4, math.sqrt((2 * 0.6**2 + 3 * 0.4**2) / 4)
    assert advantages[0] == pytest.approx((1 - mean) / std, rel=1e-4)
    errored = episode_to_experiences(
        group_episode(4, 0.0, TerminationReason.ERROR), {"mask_termination_reasons": []}
    )
    assert errored[0].info["error"] == {"error_type": "RuntimeError"}


def test_masking_other_reasons() -> None:
    episode = group_episode(0, 0.0, TerminationReason.MAX_TURNS_EXCEEDED)
    assert episode_to_experiences(episode)  # not masked by default
    assert (
        episode_to_experiences(episode, {"mask_termination_reasons": ["max_turns_exceeded"]}) == []
    )


# ---- registration and the explorer -----------------------------------------------------------


def test_registering_an_episode_workflow_registers_its_adapter() -> None:
    adapter = WORKFLOWS.get("test_guess_number_episode")
    assert issubclass(adapter, EpisodeWorkflowAdapter) and issubclass(adapter, ReinforgeWorkflow)
    assert adapter.episode_workflow_cls is GuessWorkflow
    assert adapter.is_async and adapter.can_repeat
    assert WORKFLOWS.get("test_guess_number_episode") is adapter  # cached: one class
    assert WORKFLOWS.register_module("test_guess_number_episode")(GuessWorkflow) is GuessWorkflow
    assert (adapter.__module__, adapter.__qualname__) == (
        GuessWorkflow.__module__,
        GuessWorkflow.__qualname__,
    )
    assert WORKFLOWS.get("test_guess_attached_episode").episode_workflow_cls is (
        AttachingGuessWorkflow
    )
    assert Workflow is EpisodeWorkflow


def test_dotted_path_resolves_to_the_adapter(tmp_path, monkeypatch) -> None:
    (tmp_path / "my_rllm_port.py").write_text(
        "from reinforge.workflows.episode import Workflow\n"
        "class Port(Workflow):\n"
        "    async def run(self, task, uid, **kwargs):\n"
        "        return None\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    adapter = WORKFLOWS.get("my_rllm_port.Port")
    assert issubclass(adapter, EpisodeWorkflowAdapter)
    task = Task(workflow="my_rllm_port.Port", task_id=1)
    assert task.workflow_cls is adapter
    # a Task holding the adapter class serialises to a path that resolves to it again
    assert Task.from_dict(Task(workflow=adapter).to_dict()).workflow_cls is adapter


def make_task(workflow: str, target: int = 3, **workflow_args: Any) -> Task:
    return Task(
        workflow=workflow,
        repeat_times=3,
        format_args=FormatConfig(prompt_key="question", response_key="target"),
        rollout_args=GenerationConfig(temperature=0.7, seed=11),
        workflow_args=workflow_args,
        raw_task={"question": "guess", "target": target},
        task_id=5,
    )


def test_adapter_runs_every_rollout_and_converts() -> None:
    model = make_model()
    wf = make_task("test_guess_number_episode", max_turns=4).to_workflow(model)
    wf.set_repeat_times(3, run_id_base=6)
    exps = asyncio.run(wf.run_async())
    assert len(wf.episodes) == 3 and all(e.is_correct for e in wf.episodes)
    assert sorted({e.eid.run for e in exps}) == [6, 7, 8]
    assert len(exps) == 9 and all(e.reward == 1.0 for e in exps)
    assert [ep.id for ep in wf.episodes] == ["5:6", "5:7", "5:8"]
    # rollout i samples with seed + i, and the task row reached run() as a copy
    engines = [wf.make_engine(r) for r in (6, 7)]
    assert [e.sampling["seed"] for e in engines] == [17, 18]
    assert engines[0].sampling["temperature"] == 0.7
    assert wf.episodes[0].task == {"question": "guess", "target": 3}


def test_adapter_reads_conversion_and_engine_options() -> None:
    task = make_task(
        "test_guess_number_episode",
        target=9,
        max_turns=2,
        conversion={"reward": "step", "mask_termination_reasons": ["max_turns_exceeded"]},
        rollout_engine_args={"max_prompt_length": 4096},
    )
    wf = task.to_workflow(make_model())
    assert wf.workflow_kwargs == {"max_turns": 2}
    assert wf.make_engine(0).max_prompt_length == 4096
    exps = asyncio.run(wf.run_async())  # all rollouts ran out of turns: masked
    assert exps and all(e.mask_reason.startswith("max_turns_exceeded: ") for e in exps)
    assert {ep.termination_reason for ep in wf.episodes} == {TerminationReason.MAX_TURNS_EXCEEDED}


def write_taskset(path, targets: list[int]) -> None:
    with open(path, "w") as fh:
        for target in targets:
            fh.write(json.dumps({"question": "Guess my number", "target": target}) + "\n")


def explore(tmp_path, workflow: str, targets: list[int], **workflow_args: Any):
    write_taskset(tmp_path / "tasks.jsonl", targets)
    cfg = config_from_dict(
        {
            "run_dir": str(tmp_path / "run"),
            "model": {"engine": "mock"},
            "buffer": {
                "batch_size": 4,
                "explorer_input": {
                    "taskset": {
                        "name": "guess",
                        "path": "tasks.jsonl",
                        "format": {"prompt_key": "question", "response_key": "target"},
                        "repeat_times": 2,
                        "default_workflow_type": workflow,
                        "workflow_args": workflow_args,
                    }
                },
            },
            "explorer": {"runner_concurrency": 2, "max_timeout": 30},
        },
        config_dir=str(tmp_path),
    )
    engine = RecordingEngine()
    explorer = Explorer(
        engine,
        buffer=cfg.buffer,
        explorer=cfg.explorer,
        storage=SQLiteExperienceStorage(cfg.storage_path),
        config_dir=cfg.config_dir,
    )
    try:
        summary = asyncio.run(explorer.explore())
    finally:
        explorer.close()
    return summary, SQLiteExperienceStorage(cfg.storage_path), engine


def test_explorer_runs_episode_workflows_end_to_end(tmp_path) -> None:
    summary, storage, engine = explore(
        tmp_path, "test_guess_number_episode", [2, 3, 9], max_turns=4
    )
    assert summary.status_counts == {"ok": 3}
    exps = storage.read()
    # targets 2 and 3 are found (2 and 3 steps), 9 runs out of turns (4 steps); 2 rollouts each
    assert len(exps) == summary.experiences == 2 * (2 + 3 + 4)
    by_task = Experience.group_by(exps, "task")
    assert len(by_task) == 3
    runs = Experience.group_by(exps, "run")
    assert len(runs) == 6
    for run in runs.values():
        assert [e.eid.step for e in sorted(run, key=lambda e: e.eid.step)] == list(range(len(run)))
    reasons = {(e.eid.task, e.info["termination_reason"], e.reward) for e in exps}
    assert reasons == {(0, "env_done", 1.0), (1, "env_done", 1.0), (2, "max_turns_exceeded", 0.0)}
    assert summary.metrics["explore/accuracy"] == pytest.approx((4 + 6) / 18)
    # token-exact: each stored experience is one sampled completion after its prompt
    sampled = {tuple(p + c) for p, c, _ in engine.sampled}
    assert {tuple(e.tokens.tolist()) for e in exps} <= sampled
    assert all(e.info["taskset"] == "guess" for e in exps)


def test_explorer_finishes_when_episodes_hang(tmp_path) -> None:
    summary, storage, _ = explore(tmp_path, "test_hanging_episode", [5, 6], timeout=0.2)
    assert summary.status_counts == {"ok": 2}
    exps = storage.read()
    # run 1 of each task hangs → TIMEOUT → masked (dropped); run 0 ends normally
    assert sorted((e.eid.task, e.eid.run) for e in exps) == [(0, 0), (1, 0)]
    assert {e.info["termination_reason"] for e in exps} == {"env_done"}


def test_explorer_keeps_errored_episodes_when_not_masked(tmp_path) -> None:
    summary, storage, _ = explore(
        tmp_path,
        "test_guess_number_episode",
        [9],
        explode_on_turn=2,
        conversion={"mask_termination_reasons": []},
    )
    assert summary.status_counts == {"ok": 1}
    exps = storage.read()
    assert len(exps) == 4  # two rollouts, two steps each
    for exp in exps:
        assert exp.info["termination_reason"] == "error" and exp.reward == 0.0
        assert "the number machine broke on turn 2" in exp.info["error"]["traceback"]


@pytest.mark.parametrize(
    ("workflow", "workflow_args", "reason"),
    [
        ("test_always_hanging_episode", {"timeout": 0.2}, "timeout"),
        ("test_hanging_before_any_call_episode", {"timeout": 0.2}, "timeout"),
        ("test_guess_number_episode", {"explode_on_turn": 1}, "error"),
    ],
)
def test_a_task_whose_every_episode_is_masked_is_ok_and_not_retried(
    tmp_path, workflow, workflow_args, reason
) -> None:
    # every rollout times out (or its env crashes): an outcome, masked by default - not
    # a failed task ("returned no experience") that the explorer retries
    summary, storage, _ = explore(tmp_path, workflow, [5], **workflow_args)
    assert summary.status_counts == {"ok": 1}
    assert summary.metrics["explore/failed_tasks"] == 0.0
    assert storage.read() == []  # nothing to train on
    (record,) = storage.task_results()
    assert record.status == "masked" and record.attempts == 1
    assert record.num_experiences == 0
    assert f"{reason}: episode 0:0" in record.error and f"{reason}: episode 0:1" in record.error


def test_masked_episodes_reach_the_explorer_as_masked_outcomes() -> None:
    wf = make_task("test_always_hanging_episode", timeout=0.05).to_workflow(make_model())
    exps = asyncio.run(wf.run_async())
    assert [(e.eid.run, e.eid.step) for e in exps] == [(0, 0), (1, 0), (2, 0)]
    for exp in exps:
        assert exp.mask_reason.startswith(f"timeout: episode 5:{exp.eid.run}")
        assert exp.info["termination_reason"] == "timeout" and exp.info["masked"] is True
        assert exp.reward is None and exp.response_length > 0  # the step that was sampled
    # an episode with no sampled step is still recorded, as one empty masked experience
    wf = make_task("test_hanging_before_any_call_episode", timeout=0.05).to_workflow(make_model())
    exps = asyncio.run(wf.run_async())
    assert len(exps) == 3 and all(e.response_length == 0 and e.reward is None for e in exps)
    assert all(e.mask_reason.startswith("timeout: ") for e in exps)
    assert {e.info["termination_reason"] for e in exps} == {"timeout"}
    # invalid_reward: the steps go on to the pipeline as documented (reward None, not
    # masked here); only an episode without steps needs the masked placeholder
    wf = make_task(
        "test_always_hanging_episode", timeout=0.05, conversion={"masked": "invalid_reward"}
    ).to_workflow(make_model())
    exps = asyncio.run(wf.run_async())
    assert len(exps) == 3
    assert all(e.mask_reason is None and e.reward is None and e.info["masked"] for e in exps)


def test_thread_unsafe_envs_take_turns_in_the_executor() -> None:
    import threading
    import time

    state = {"inside": 0, "most": 0}
    lock = threading.Lock()

    class Unsafe(GuessEnv):
        @staticmethod
        def is_multithread_safe() -> bool:
            return False

        def step(self, action, pause=0.0):
            with lock:
                state["inside"] += 1
                state["most"] = max(state["most"], state["inside"])
            time.sleep(pause)
            with lock:
                state["inside"] -= 1
            return "x", 0.0, True, {}

    async def both() -> None:
        workflows = [guess_workflow() for _ in range(3)]
        for wf in workflows:
            wf.env = Unsafe()
        await asyncio.gather(
            *(wf.run_in_executor(wf.env.step, "1", pause=0.05) for wf in workflows)
        )

    asyncio.run(both())
    assert state["most"] == 1


class EngineWithCallsCounter(ModelWrapperEngine):
    """A user's rollout engine that keeps its own ``calls`` counter (an int)."""

    def __init__(self, model: ModelWrapper) -> None:
        super().__init__(model)
        self.calls = 0

    async def get_model_response(self, messages, **kwargs):
        self.calls += 1
        return await super().get_model_response(messages, **kwargs)


def test_a_user_attribute_named_calls_does_not_break_the_episode() -> None:
    engine = EngineWithCallsCounter(make_model())
    episode = run_episode(GuessWorkflow(rollout_engine=engine, max_turns=3), {"target": 2})
    assert episode.termination_reason != TerminationReason.ERROR, episode.info.get("error")
    assert engine.calls >= 1 and episode.trajectories


class BrokenPostprocess(GuessWorkflow):
    def collect_metrics(self, episode: Episode) -> None:
        raise KeyError("metric bookkeeping broke")


def test_any_exception_inside_ends_as_an_error_episode() -> None:
    wf = BrokenPostprocess(rollout_engine=ModelWrapperEngine(make_model()), max_turns=2)
    episode = run_episode(wf, {"target": 1}, uid="7:0")
    assert episode.termination_reason == TerminationReason.ERROR and episode.id == "7:0"
    assert "metric bookkeeping broke" in episode.info["error"]["error_message"]


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message for you")


class RaisesUnprintable(GuessWorkflow):
    async def run(self, task: dict, uid: str, **kwargs) -> Episode | None:
        raise Unprintable()


def test_an_exception_that_cannot_be_printed_still_ends_as_error() -> None:
    wf = RaisesUnprintable(rollout_engine=ModelWrapperEngine(make_model()))
    episode = run_episode(wf, {"target": 1})
    assert episode.termination_reason == TerminationReason.ERROR
    assert episode.info["error"]["error_type"] == "Unprintable"
    assert "Unprintable" in episode.info["error"]["traceback"]
