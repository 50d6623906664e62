"""``EpisodeWorkflow``: rLLM's episode-style workflow, running on reinforge.

Write ``async run(task, uid)`` that drives agents, environments and the rollout
engine, and let ``run_with_termination_handling`` turn whatever happened - a normal
end, a ``TerminationEvent``, a timeout, an exception - into a finished ``Episode``
(trajectory rewards, correctness, metrics, termination reason, error details).

The class is also exported as ``Workflow`` (``reinforge.workflows.episode.Workflow``)
so that rLLM code that subclasses ``Workflow`` moves over by changing its imports.
Registered in ``reinforge.workflows.WORKFLOWS`` it runs in the explorer like any
other workflow, through ``EpisodeWorkflowAdapter``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import inspect
import threading
import traceback
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from typing import Any

from reinforge.core.episode import (
    Episode,
    TerminationEvent,
    TerminationReason,
    Trajectory,
)
from reinforge.workflows.episode.agent import BaseAgent
from reinforge.workflows.episode.attach import attach_model_outputs
from reinforge.workflows.episode.env import BaseEnv
from reinforge.workflows.episode.reward_adjust import discounted_returns, reward_bonus
from reinforge.workflows.episode.rollout_engine import RolloutEngine

__all__ = ["EpisodeWorkflow", "TerminationEvent", "TerminationReason", "Workflow"]

#: episode workflow class -> the reinforge ``Workflow`` that runs it in the explorer.
#: The adapter sits on top of this module (it builds and runs ``EpisodeWorkflow``s),
#: so this module never imports it: ``reinforge.workflows.episode.adapter`` installs
#: its ``adapter_for`` here when imported, and the package imports the adapter, so it
#: is in place before any episode workflow class can be registered.
_adapter_factory: Callable[[type], type] | None = None


def install_adapter_factory(factory: Callable[[type], type]) -> None:
    """Set what ``EpisodeWorkflow.__reinforge_workflow__`` returns (the adapter calls this)."""
    global _adapter_factory
    _adapter_factory = factory


def _members(obj: Any, kind: type) -> Iterator[Any]:
    """Public attributes of ``obj`` that are ``kind`` instances, also inside lists and dicts.

    Each instance once, even if several attributes refer to it.
    """
    seen: set[int] = set()
    for name, value in vars(obj).items():
        if name.startswith("_"):
            continue
        if isinstance(value, list | tuple):
            candidates = list(value)
        elif isinstance(value, dict):
            candidates = list(value.values())
        else:
            candidates = [value]
        for item in candidates:
            if isinstance(item, kind) and id(item) not in seen:
                seen.add(id(item))
                yield item


_UNSAFE_LOCK = threading.Lock()


def _serialised(call: Callable[[], Any]) -> Any:
    """Run ``call`` while holding the lock shared by all thread-unsafe environments."""
    with _UNSAFE_LOCK:
        return call()


def _accepts_task(method: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == "task" or p.kind is p.VAR_KEYWORD for p in params)


class EpisodeWorkflow(ABC):
    """Base of episode-style workflows (rLLM's ``Workflow``).

    Constructor arguments: ``rollout_engine`` (``get_model_response``), ``executor``
    (for ``run_in_executor``; None uses the event loop's default), ``timeout``
    (seconds for one episode), ``gamma`` and ``reward_bonus_coeff`` (step-reward
    adjustment, see ``adjust_step_rewards``), and
    ``adjust_rewards_before_trajectory_reward``: rLLM computes the trajectory reward
    first and adjusts step rewards afterwards (the default, False), so the
    adjustment never reaches the trajectory reward; True adjusts first, so
    ``compute_trajectory_reward`` sees the shaped/discounted step rewards. Other
    keyword arguments are accepted and ignored, as in rLLM.

    ``conversion_options`` (a ``ConversionOptions`` or dict) sets how the explorer
    turns this workflow's episodes into experiences; a taskset's
    ``workflow_args.conversion`` overrides it field by field.
    """

    conversion_options: Any = None

    def __init__(
        self,
        rollout_engine: RolloutEngine,
        executor: Executor | None = None,
        timeout: float | None = 1e6,
        gamma: float = 0.0,
        reward_bonus_coeff: float = 0.0,
        adjust_rewards_before_trajectory_reward: bool = False,
        **kwargs: Any,
    ) -> None:
        self.rollout_engine = rollout_engine
        self.executor = executor
        self.timeout = None if timeout is None else float(timeout)
        self.gamma = float(gamma)
        self.reward_bonus_coeff = float(reward_bonus_coeff)
        self.adjust_rewards_before_trajectory_reward = bool(adjust_rewards_before_trajectory_reward)
        self.uid: str | None = None
        self.task: Any = None
        self._completed_trajectories: list[Trajectory] = []

    # ---- to implement ------------------------------------------------------------------

    @abstractmethod
    async def run(self, task: dict[str, Any], uid: str, **kwargs: Any) -> Episode | None:
        """Run one episode of ``task``.

        End it by returning (the trajectories are then collected from ``commit``
        calls and the agents), by raising ``TerminationEvent(reason)``, or by
        returning an ``Episode`` you built yourself (taken as final, as in rLLM).
        """

    # ---- running -----------------------------------------------------------------------

    async def run_with_termination_handling(
        self, task: dict[str, Any], uid: str, **kwargs: Any
    ) -> Episode:
        """Run ``run`` under the timeout and turn any way it ends into a finished Episode.

        * returns normally → postprocessed with ``UNKNOWN`` (rLLM's choice: only the
          workflow knows why it stopped, so say it with a ``TerminationEvent``);
        * raises ``TerminationEvent`` → its ``reason``;
        * the timeout (``timeout`` keyword, else ``self.timeout``) expires → ``TIMEOUT``;
        * raises anything else → ``ERROR``, with type, message and traceback stored in
          ``episode.info["error"]``.

        Trajectories recorded before the end are kept, unless finishing the episode
        (rewards, metrics: ``postprocess_episode``) raises itself: that still ends as
        an ``ERROR`` episode, without them. No exception escapes but cancellation
        (``CancelledError``), which belongs to whoever cancelled.
        """
        try:
            return await self._run_and_finish(task, uid, **kwargs)
        except Exception as exc:  # even finishing the episode failed: still an ERROR episode
            return Episode(
                id=uid, task=task, termination_reason=TerminationReason.ERROR,
                info={"error": error_info(exc)},
            )  # fmt: skip

    async def _run_and_finish(self, task: dict[str, Any], uid: str, **kwargs: Any) -> Episode:
        timeout = kwargs.pop("timeout", self.timeout)
        self.uid, self.task = uid, task
        self._completed_trajectories = []
        scope: asyncio.Timeout | None = None
        try:
            async with asyncio.timeout(timeout) as scope:
                output = await self.run(task, uid, **kwargs)
        except TerminationEvent as event:
            return self.postprocess_episode(self.collect_trajectories(), event.reason)
        except TimeoutError as exc:
            if scope is not None and scope.expired():
                return self.postprocess_episode(
                    self.collect_trajectories(), TerminationReason.TIMEOUT
                )
            return self._failed(exc)  # a TimeoutError raised by the workflow's own code
        except Exception as exc:
            return self._failed(exc)
        if isinstance(output, Episode):
            output.id = output.id or uid
            if output.task is None:
                output.task = task
            if output.termination_reason is None:
                output.termination_reason = TerminationReason.UNKNOWN
            return output
        return self.postprocess_episode(self.collect_trajectories(), TerminationReason.UNKNOWN)

    def _failed(self, exc: BaseException) -> Episode:
        return self.postprocess_episode(
            self.collect_trajectories(), TerminationReason.ERROR, error=error_info(exc)
        )

    # ---- trajectories ------------------------------------------------------------------

    def commit(
        self,
        name: str | None = None,
        agent: BaseAgent | None = None,
        trajectory: Trajectory | None = None,
        reset: bool = False,
    ) -> None:
        """Record a finished trajectory (of ``agent`` or given directly) for training.

        A copy is stored, so the agent may go on (or be reset with ``reset=True``)
        and start a new trajectory in the same episode. Empty trajectories are skipped.
        """
        if (agent is None) == (trajectory is None):
            raise ValueError("commit() takes exactly one of agent= or trajectory=")
        traj = agent.trajectory if agent is not None else trajectory
        assert traj is not None
        if name:
            traj.name = name
        if traj.steps:
            self._completed_trajectories.append(copy.deepcopy(traj))
        if agent is not None and reset:
            agent.reset()

    def collect_trajectories(self) -> Episode:
        """An Episode of the committed trajectories plus those of agents not yet committed."""
        episode = Episode(trajectories=list(self._completed_trajectories))
        seen = {t.uid for t in self._completed_trajectories}
        for agent in _members(self, BaseAgent):
            traj = agent.trajectory
            if traj.steps and traj.uid not in seen:
                seen.add(traj.uid)
                episode.trajectories.append(copy.deepcopy(traj))
        return episode

    # ---- rewards and outcome -----------------------------------------------------------

    def compute_trajectory_reward(self, trajectory: Trajectory) -> None:
        """Set ``trajectory.reward``. Default: the sum of its step rewards."""
        trajectory.reward = float(sum(step.reward for step in trajectory.steps))

    def adjust_step_rewards(self, trajectory: Trajectory) -> None:
        """Shape and discount step rewards in place (a no-op with the default 0.0 settings).

        With ``reward_bonus_coeff`` c: ``r_t += c * (r_t - r_{t-1})`` for t >= 1 (raw
        rewards on the right). Then with ``gamma`` > 0 each reward is replaced by its
        discounted reward-to-go ``G_t = r_t + gamma * G_{t+1}``, also kept in
        ``step.mc_return``.
        """
        steps = trajectory.steps
        rewards = [float(step.reward) for step in steps]
        if self.reward_bonus_coeff > 0.0:
            rewards = reward_bonus(rewards, self.reward_bonus_coeff)
        if self.gamma > 0.0:
            rewards = discounted_returns(rewards, self.gamma)
            for step, ret in zip(steps, rewards, strict=True):
                step.mc_return = ret
        for step, reward in zip(steps, rewards, strict=True):
            step.reward = reward

    def assign_episode_correctness(self, episode: Episode) -> None:
        """Set ``episode.is_correct``. Default: the trajectory rewards sum to more than 0."""
        total = sum(float(t.reward or 0.0) for t in episode.trajectories)
        episode.is_correct = total > 0

    def collect_metrics(self, episode: Episode) -> None:
        """Set ``episode.metrics``. Default: ``{name}_acc``, the mean trajectory reward per name."""
        by_name: dict[str, list[float]] = defaultdict(list)
        for traj in episode.trajectories:
            by_name[traj.name].append(float(traj.reward or 0.0))
        episode.metrics = {f"{name}_acc": sum(v) / len(v) for name, v in by_name.items()}

    def postprocess_episode(
        self,
        episode: Episode,
        termination_reason: TerminationReason | None = None,
        error: dict[str, Any] | None = None,
    ) -> Episode:
        """Finish ``episode``: ids, rewards, correctness, metrics, error, termination reason.

        Steps that recorded only the reply text first get the token ids of the engine
        call that produced them (``attach.attach_model_outputs``). A trailing step
        that never got a model reply (the episode ended between the environment's
        answer and the next model call) is dropped.
        """
        episode.id = self.uid or episode.id
        episode.task = self.task
        calls = getattr(self.rollout_engine, "_reinforge_calls", None)
        if calls:
            attach_model_outputs(episode, calls)
        before = self.adjust_rewards_before_trajectory_reward
        for traj in episode.trajectories:
            if traj.steps and not traj.steps[-1].chat_completions and not traj.steps[-1].has_tokens:
                traj.steps.pop()
            if before and len(traj.steps) > 1:
                self.adjust_step_rewards(traj)
            self.compute_trajectory_reward(traj)
            if not before and len(traj.steps) > 1:
                self.adjust_step_rewards(traj)
        self.assign_episode_correctness(episode)
        self.collect_metrics(episode)
        if error is not None:
            episode.info["error"] = error
        episode.termination_reason = termination_reason or TerminationReason.UNKNOWN
        return episode

    # ---- lifecycle ---------------------------------------------------------------------

    def reset(self, task: dict[str, Any] | None = None, uid: str | None = None) -> None:
        """Start a new episode: set task and uid, drop commits, reset agents and envs."""
        self.uid, self.task = uid, task
        self._completed_trajectories = []
        for agent in _members(self, BaseAgent):
            agent.reset()
            with contextlib.suppress(AttributeError):  # a read-only trajectory property
                agent.trajectory.task = task
        for env in _members(self, BaseEnv):
            if _accepts_task(env.reset):
                env.reset(task=task)
            else:
                env.reset()

    def is_multithread_safe(self) -> bool:
        """False if any of this workflow's environments is not thread-safe."""
        return all(env.is_multithread_safe() for env in _members(self, BaseEnv))

    async def run_in_executor(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run blocking ``fn(*args, **kwargs)`` in ``self.executor`` without blocking the loop.

        When ``is_multithread_safe()`` is False (an environment says its instances
        must not run in parallel threads), such calls of all workflows in the process
        take turns under one lock.
        """
        call = functools.partial(fn, *args, **kwargs)
        if not self.is_multithread_safe():
            call = functools.partial(_serialised, call)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, call)

    # ---- registration ------------------------------------------------------------------

    @classmethod
    def __reinforge_workflow__(cls) -> type:
        """The reinforge ``Workflow`` class that runs this episode workflow in the explorer.

        ``WORKFLOWS.register_module`` and ``WORKFLOWS.get`` call this, so registering
        an episode workflow class (or naming it by dotted path) just works.
        """
        if _adapter_factory is None:  # only while the package itself is being imported
            raise RuntimeError(
                "no episode workflow adapter is installed; import reinforge.workflows.episode"
            )
        return _adapter_factory(cls)


Workflow = EpisodeWorkflow


def error_info(exc: BaseException) -> dict[str, str]:
    """Type, message and traceback of ``exc``, even when its ``__str__`` itself fails."""
    try:
        message = str(exc)
    except Exception:
        message = f"<{type(exc).__name__}: str() failed>"
    return {
        "error_type": type(exc).__name__,
        "error_message": message,
        "traceback": "".join(traceback.format_exception(exc)),
    }
