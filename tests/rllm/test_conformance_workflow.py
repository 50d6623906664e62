"""``rllm.workflows.workflow.Workflow`` used the way rLLM workflow code uses it.

Covers the base class's public surface: the constructor (``rollout_engine``,
``executor``, ``timeout``, ``gamma``, ``reward_bonus_coeff``, extra keywords), ``run``,
``run_with_termination_handling``, ``commit``, ``collect_trajectories``,
``compute_trajectory_reward``, ``adjust_step_rewards``, ``assign_episode_correctness``,
``collect_metrics``, ``postprocess_episode``, ``reset``, ``is_multithread_safe`` and
``run_in_executor``. Everything is imported from the ``reinforge.rllm`` mirror, as
migrated code does, and the policy is the mock engine.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from reinforge.models import MockEngine, ModelWrapper
from reinforge.rllm.agents.agent import BaseAgent, Episode, Step, Trajectory
from reinforge.rllm.engine.rollout import ModelOutput, RolloutEngine
from reinforge.rllm.environments.base.base_env import BaseEnv
from reinforge.rllm.workflows.workflow import TerminationEvent, TerminationReason, Workflow
from reinforge.workflows.episode import ModelWrapperEngine


def _engine(reply: str = "4") -> RolloutEngine:
    return ModelWrapperEngine(ModelWrapper(MockEngine(replies=[reply])))


class OneShot(Workflow):
    """Asks once, scores the reply against ``task["answer"]``, ends with ENV_DONE."""

    async def run(self, task: dict, uid: str, **kwargs: Any) -> Episode | None:
        self.reset(task, uid)
        messages = [{"role": "user", "content": task["question"]}]
        output: ModelOutput = await self.rollout_engine.get_model_response(messages)
        step = Step(chat_completions=messages, model_response=output.content)
        step.reward = float(output.content.strip() == task["answer"])
        step.done = True
        self.commit(name="solver", trajectory=Trajectory(steps=[step]))
        raise TerminationEvent(TerminationReason.ENV_DONE)


class Scripted(Workflow):
    """Commits one trajectory of given step rewards, then ends the way it is told to."""

    def __init__(self, rollout_engine: RolloutEngine, rewards: list[float], end: str, **kw: Any):
        super().__init__(rollout_engine, **kw)
        self.rewards, self.end = rewards, end

    async def run(self, task: dict, uid: str, **kwargs: Any) -> Episode | None:
        steps = [
            Step(chat_completions=[{"role": "assistant", "content": "x"}], reward=r)
            for r in self.rewards
        ]
        self.commit(name="walker", trajectory=Trajectory(steps=steps))
        if self.end == "error":
            raise RuntimeError("the environment fell over")
        if self.end == "hang":
            await asyncio.sleep(30)
        if self.end == "max_turns":
            raise TerminationEvent(TerminationReason.MAX_TURNS_EXCEEDED)
        return None


def _run(wf: Workflow, task: dict | None = None, uid: str = "t0:0") -> Episode:
    return asyncio.run(wf.run_with_termination_handling(task or {}, uid))


def test_constructor_takes_rllms_arguments_and_ignores_extra_keywords() -> None:
    executor = ThreadPoolExecutor(max_workers=1)
    wf = OneShot(_engine(), executor, timeout=30, gamma=0.9, reward_bonus_coeff=0.5, max_steps=7)
    assert wf.rollout_engine is not None and wf.executor is executor
    assert (wf.timeout, wf.gamma, wf.reward_bonus_coeff) == (30.0, 0.9, 0.5)
    defaults = OneShot(_engine(), executor)
    assert (defaults.gamma, defaults.reward_bonus_coeff) == (0.0, 0.0)
    executor.shutdown()
    with pytest.raises(TypeError):
        Workflow(_engine(), None)  # run is abstract


def test_run_with_termination_handling_builds_a_scored_episode() -> None:
    task = {"question": "What is 2 + 2?", "answer": "4"}
    episode = _run(OneShot(_engine("4"), None), task, uid="task-1:0")
    assert isinstance(episode, Episode)
    assert episode.id == "task-1:0" and episode.task == task
    assert episode.termination_reason is TerminationReason.ENV_DONE
    (traj,) = episode.trajectories
    assert traj.name == "solver" and traj.reward == 1.0
    assert episode.is_correct and episode.metrics == {"solver_acc": 1.0}
    wrong = _run(OneShot(_engine("5"), None), task)
    assert not wrong.is_correct and wrong.trajectories[0].reward == 0.0


@pytest.mark.parametrize(
    ("end", "reason"),
    [
        ("plain", TerminationReason.UNKNOWN),
        ("max_turns", TerminationReason.MAX_TURNS_EXCEEDED),
        ("error", TerminationReason.ERROR),
        ("hang", TerminationReason.TIMEOUT),
    ],
)
def test_every_way_of_ending_keeps_the_committed_trajectory(end: str, reason) -> None:
    wf = Scripted(_engine(), [0.0, 1.0], end, timeout=0.05)
    episode = _run(wf)
    assert episode.termination_reason is reason
    assert [t.reward for t in episode.trajectories] == [1.0]
    if end == "error":
        error = episode.info["error"]
        assert error["error_type"] == "RuntimeError"
        assert "fell over" in error["error_message"] and "Traceback" in error["traceback"]
    else:
        assert "error" not in episode.info


def test_commit_needs_exactly_one_source_and_stores_a_copy() -> None:
    wf = Scripted(_engine(), [], "plain")
    traj = Trajectory(steps=[Step(reward=1.0)])
    wf.commit(name="first", trajectory=traj)
    traj.steps.append(Step(reward=5.0))  # later edits do not reach the committed copy
    wf.commit(trajectory=Trajectory())  # an empty trajectory is skipped
    with pytest.raises(ValueError, match="exactly one"):
        wf.commit()
    episode = wf.collect_trajectories()
    assert [(t.name, len(t.steps)) for t in episode.trajectories] == [("first", 1)]


class Counter(BaseAgent):
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._trajectory = Trajectory(name="counter")

    @property
    def chat_completions(self) -> list[dict]:
        return []

    @property
    def trajectory(self) -> Trajectory:
        return self._trajectory

    def update_from_env(self, observation, reward, done, info, **kwargs) -> None:
        pass

    def update_from_model(self, response: str, **kwargs):
        self._trajectory.steps.append(Step(model_response=response, reward=1.0))


class Lamp(BaseEnv):
    def __init__(self, safe: bool = True) -> None:
        self.safe, self.task = safe, None

    def reset(self, task: dict | None = None):
        self.task = task
        return "dark", {}

    def step(self, action):
        return "lit", 1.0, True, {}

    def is_multithread_safe(self) -> bool:
        return self.safe


class AgentAndEnv(Workflow):
    def __init__(self, rollout_engine: RolloutEngine, safe: bool = True, **kw: Any) -> None:
        super().__init__(rollout_engine, **kw)
        self.agent, self.env = Counter(), Lamp(safe)

    async def run(self, task: dict, uid: str, **kwargs: Any) -> Episode | None:
        return None


def test_commit_with_reset_and_uncommitted_agents_are_collected() -> None:
    wf = AgentAndEnv(_engine())
    wf.agent.update_from_model("a")
    wf.commit(agent=wf.agent, reset=True)  # the agent starts a new trajectory
    assert wf.agent.trajectory.steps == []
    wf.agent.update_from_model("b")
    wf.agent.update_from_model("c")
    episode = wf.collect_trajectories()
    assert [len(t.steps) for t in episode.trajectories] == [1, 2]


def test_reset_sets_task_and_uid_and_resets_agents_and_envs() -> None:
    wf = AgentAndEnv(_engine())
    wf.agent.update_from_model("a")
    wf.commit(agent=wf.agent)
    wf.reset(task={"id": 3}, uid="u3")
    assert (wf.task, wf.uid) == ({"id": 3}, "u3")
    assert wf.env.task == {"id": 3} and wf.agent.trajectory.steps == []
    assert wf.collect_trajectories().trajectories == []


def test_trajectory_reward_is_the_step_sum_by_default_and_can_be_overridden() -> None:
    wf = Scripted(_engine(), [], "plain")
    traj = Trajectory(steps=[Step(reward=0.25), Step(reward=0.5)])
    wf.compute_trajectory_reward(traj)
    assert traj.reward == 0.75

    class LastStep(Scripted):
        def compute_trajectory_reward(self, trajectory: Trajectory) -> None:
            trajectory.reward = trajectory.steps[-1].reward

    episode = _run(LastStep(_engine(), [3.0, 0.5], "plain"))
    assert episode.trajectories[0].reward == 0.5


def test_adjust_step_rewards_shapes_and_discounts() -> None:
    untouched = Trajectory(steps=[Step(reward=0.0), Step(reward=1.0)])
    Scripted(_engine(), [], "plain").adjust_step_rewards(untouched)  # gamma = coeff = 0
    assert [s.reward for s in untouched.steps] == [0.0, 1.0]

    shaped = Trajectory(steps=[Step(reward=0.0), Step(reward=1.0), Step(reward=0.5)])
    Scripted(_engine(), [], "plain", reward_bonus_coeff=0.5).adjust_step_rewards(shaped)
    assert [s.reward for s in shaped.steps] == [0.0, 1.5, 0.25]

    discounted = Trajectory(steps=[Step(reward=0.0), Step(reward=0.0), Step(reward=1.0)])
    Scripted(_engine(), [], "plain", gamma=0.5).adjust_step_rewards(discounted)
    assert [s.reward for s in discounted.steps] == [0.25, 0.5, 1.0]
    assert [s.mc_return for s in discounted.steps] == [0.25, 0.5, 1.0]


def test_adjustment_comes_after_the_trajectory_reward_as_in_rllm() -> None:
    episode = _run(Scripted(_engine(), [0.0, 0.0, 1.0], "plain", gamma=0.5))
    (traj,) = episode.trajectories
    assert traj.reward == 1.0  # the raw sum: discounting does not reach it
    assert [s.reward for s in traj.steps] == [0.25, 0.5, 1.0]


def test_correctness_and_metrics_hooks() -> None:
    wf = Scripted(_engine(), [], "plain")
    episode = Episode(
        trajectories=[
            Trajectory(name="solver", reward=1.0),
            Trajectory(name="solver", reward=0.0),
            Trajectory(name="judge", reward=-0.5),
        ]
    )
    wf.assign_episode_correctness(episode)
    assert episode.is_correct  # 1.0 + 0.0 - 0.5 > 0
    wf.collect_metrics(episode)
    assert episode.metrics == {"solver_acc": 0.5, "judge_acc": -0.5}
    episode.trajectories[0].reward = 0.5
    wf.assign_episode_correctness(episode)
    assert not episode.is_correct  # exactly 0 is not correct


def test_postprocess_episode_sets_reason_error_and_rewards() -> None:
    wf = Scripted(_engine(), [], "plain")
    wf.reset(task={"q": 1}, uid="u9")
    episode = Episode(
        trajectories=[Trajectory(steps=[Step(chat_completions=[{"role": "user"}], reward=2.0)])]
    )
    done = wf.postprocess_episode(
        episode, TerminationReason.MAX_RESPONSE_LENGTH_EXCEEDED, error={"error_type": "X"}
    )
    assert done is episode and done.id == "u9" and done.task == {"q": 1}
    assert done.termination_reason is TerminationReason.MAX_RESPONSE_LENGTH_EXCEEDED
    assert done.info["error"] == {"error_type": "X"}
    assert done.trajectories[0].reward == 2.0 and done.is_correct


def test_thread_safety_follows_the_environments_and_run_in_executor_runs_off_loop() -> None:
    assert AgentAndEnv(_engine(), safe=True).is_multithread_safe()
    unsafe = AgentAndEnv(_engine(), safe=False, executor=ThreadPoolExecutor(max_workers=2))
    assert not unsafe.is_multithread_safe()

    def blocking(a: int, b: int = 0) -> tuple[int, str]:
        return a + b, threading.current_thread().name

    async def go() -> tuple[int, str]:
        return await unsafe.run_in_executor(blocking, 2, b=3)

    total, thread = asyncio.run(go())
    assert total == 5 and thread != threading.main_thread().name
    unsafe.executor.shutdown()
