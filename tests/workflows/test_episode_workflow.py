"""Episode workflows run directly: termination reasons, rewards and correctness,
conversion to experiences, and masking of failed episodes (the guess-the-number game
of ``episode_guess_game.py``). Through the explorer: ``test_episode_workflow_explorer.py``.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest
from episode_guess_game import (
    AttachingGuessWorkflow,
    GuessEnv,
    GuessWorkflow,
    HangsOnOddRuns,
    guess_workflow,
    make_model,
    run_episode,
)

from reinforge.buffer.pipeline import ExperiencePipeline
from reinforge.core import Experience
from reinforge.workflows.episode import (
    ConversionOptions,
    Episode,
    EpisodeWorkflow,
    ModelWrapperEngine,
    Step,
    TerminationEvent,
    TerminationReason,
    Trajectory,
    episode_to_experiences,
)

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
