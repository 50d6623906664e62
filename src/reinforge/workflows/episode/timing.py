"""``TimingTrackingMixin``: rLLM's per-episode timing of model, environment and reward time.

Mixed in before the episode ``Workflow`` (``class W(TimingTrackingMixin, Workflow)``),
it starts a clock in ``reset``, adds up the time spent in ``timed_llm_call`` and
``timed_env_call`` (and what ``add_reward_time`` reports), and in
``postprocess_episode`` writes ``info["timing"]`` on the episode, each trajectory and
each step. The explorer copies the episode's and the step's timing into the
experiences' ``info`` (``timing`` and ``step_timing``), so they are stored with them.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any


def _now_iso() -> str:
    return datetime.now(UTC).isoformat()


class TimingTrackingMixin:
    """Timing for an episode workflow; the names and the ``info`` layout are rLLM's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timing_data: dict[str, Any] = {}
        self._step_timings: list[dict[str, Any]] = []
        self._current_step_timing: dict[str, Any] | None = None
        self.start_timing()

    def start_timing(self) -> None:
        """Zero the counters and note the episode's start."""
        self._timing_data = {
            "llm_time": 0.0,
            "env_time": 0.0,
            "reward_time": 0.0,
            "total_time": 0.0,
            "start_time": time.time(),
            "start_timestamp": _now_iso(),
            "end_time": None,
            "end_timestamp": None,
        }
        self._step_timings = []
        self._current_step_timing = None

    def _close_current_step(self) -> None:
        if self._current_step_timing is not None:
            self._current_step_timing["step_end_time"] = time.time()
            self._current_step_timing["step_end_timestamp"] = _now_iso()
            self._step_timings.append(self._current_step_timing)
            self._current_step_timing = None

    def _open_step(self) -> None:
        self._close_current_step()
        self._current_step_timing = {
            "llm_time": 0.0,
            "env_time": 0.0,
            "step_start_time": time.time(),
            "step_start_timestamp": _now_iso(),
            "step_end_time": None,
            "step_end_timestamp": None,
        }

    def _add(self, key: str, seconds: float) -> None:
        self._timing_data[key] += seconds
        if self._current_step_timing is not None and key in self._current_step_timing:
            self._current_step_timing[key] += seconds

    async def timed_llm_call(self, *args: Any, **kwargs: Any) -> Any:
        """``rollout_engine.get_model_response(...)``, timed; each call opens a new step."""
        self._open_step()
        start = time.perf_counter()
        result = await self.rollout_engine.get_model_response(*args, **kwargs)  # type: ignore[attr-defined]
        self._add("llm_time", time.perf_counter() - start)
        return result

    async def timed_env_call(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """``func(*args, **kwargs)`` in the workflow's executor (``run_in_executor``), timed."""
        start = time.perf_counter()
        result = await self.run_in_executor(func, *args, **kwargs)  # type: ignore[attr-defined]
        self._add("env_time", time.perf_counter() - start)
        return result

    def add_reward_time(self, duration: float) -> None:
        """Count ``duration`` seconds of reward computation."""
        self._timing_data["reward_time"] += float(duration)

    def finalize_timing(self) -> dict[str, Any]:
        """End the episode's clock; the episode-level timing dict."""
        self._close_current_step()
        end = time.time()
        self._timing_data["end_time"] = end
        self._timing_data["end_timestamp"] = _now_iso()
        self._timing_data["total_time"] = end - self._timing_data["start_time"]
        keys = ("start_timestamp", "end_timestamp", "llm_time", "env_time", "reward_time")
        return {
            **{k: self._timing_data[k] for k in keys},
            "total_time": self._timing_data["total_time"],
        }

    def postprocess_episode(
        self, episode: Any, termination_reason: Any = None, error: Any = None
    ) -> Any:
        """The base class's post-processing, then the timing in the ``info`` of the episode,
        its trajectories (with ``num_steps``) and their steps."""
        timing = self.finalize_timing()
        episode = super().postprocess_episode(episode, termination_reason, error)  # type: ignore[misc]
        episode.info["timing"] = timing
        steps = self._step_timings
        for trajectory in episode.trajectories:
            trajectory.info["num_steps"] = len(trajectory.steps)
            trajectory.info["timing"] = {
                **timing,
                "start_timestamp": steps[0]["step_start_timestamp"]
                if steps
                else timing["start_timestamp"],
                "end_timestamp": steps[-1]["step_end_timestamp"]
                if steps
                else timing["end_timestamp"],
            }
            for i, step in enumerate(trajectory.steps):
                recorded = steps[i] if i < len(steps) else {}
                step.info["timing"] = {
                    "start_timestamp": recorded.get("step_start_timestamp"),
                    "end_timestamp": recorded.get("step_end_timestamp"),
                    "llm_time": recorded.get("llm_time", 0.0),
                    "env_time": recorded.get("env_time", 0.0),
                }
        return episode

    def reset(self, task: Any = None, uid: str | None = None) -> Any:
        """Start the clock, then the base class's reset."""
        self.start_timing()
        return super().reset(task, uid)  # type: ignore[misc]
