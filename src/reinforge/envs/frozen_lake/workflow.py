"""FrozenLake workflows: the policy walks a random frozen lake, one move per turn.

``frozen_lake_workflow`` (Trinity-RFT's FrozenLakeWorkflow): one conversation per
run, turned into one multi-turn experience (every reply trained on, observations
masked out) with reward 1 if the goal was reached, else 0.

``step_wise_frozen_lake_workflow``: the same game as a ``StepWiseRewardWorkflow``:
one experience per move (``eid.step``), rewarded with that move's environment
reward plus ``invalid_action_penalty`` for an unparseable reply; train it with the
``step_wise_grpo`` algorithm (or ``gigpo``: each move's experience carries
``info["state_hash"]``, the hash of the board it was made on). Needs ``explorer.rollout_model.enable_history``.

Settings come from the taskset row (``raw_task``) first, then ``workflow_args``:
``size`` (4), ``p`` (0.8, chance of a frozen tile), ``seed`` (42), ``is_slippery``
(false), ``desc`` (a fixed map instead of a random one), ``max_steps`` (10; alias
``agent_max_steps``), ``system_prompt``, ``invalid_action_penalty`` (0.0, step-wise),
``show_surroundings`` (false: when true, every observation also says, below the grid,
where the goal lies from the player and what each move reaches).

``demonstration`` writes an optimal player's conversation on a map, for supervised
warm starts (``examples/frozen_lake/sft.yaml``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import reinforge.envs.frozen_lake.env as frozen_lake_env
from reinforge.core import Experience, Task
from reinforge.envs.frozen_lake.env import ACTION_NAMES, StepResult, TextFrozenLake
from reinforge.envs.frozen_lake.prompts import feedback, start_messages
from reinforge.envs.task_settings import settings_from_task
from reinforge.models.wrapper.sampling_args import rollout_kwargs
from reinforge.workflows.multi_turn import MultiTurnWorkflow, context_full
from reinforge.workflows.step_wise import StepWiseRewardWorkflow
from reinforge.workflows.workflow import WORKFLOWS


@dataclass
class FrozenLakeSettings:
    size: int = 4
    p: float = 0.8
    seed: int = 42
    is_slippery: bool = False
    desc: list[str] | None = None
    max_steps: int = 10
    system_prompt: str | None = None
    invalid_action_penalty: float = 0.0
    show_surroundings: bool = False

    @classmethod
    def from_task(cls, task: Task) -> FrozenLakeSettings:
        merged = {**(task.workflow_args or {}), **(task.raw_task or {})}
        if "max_steps" not in merged and "agent_max_steps" in merged:
            merged["max_steps"] = merged["agent_max_steps"]
        settings = settings_from_task(cls, merged, "frozen lake", task)
        if settings.max_steps < 1:
            raise ValueError(f"frozen lake max_steps must be at least 1, got {settings.max_steps}")
        return settings

    def make_env(self) -> TextFrozenLake:
        return TextFrozenLake(
            size=int(self.size),
            p=float(self.p),
            seed=int(self.seed),
            is_slippery=bool(self.is_slippery),
            desc=self.desc,
        )

    def start_messages(self, env: TextFrozenLake) -> list[dict[str, Any]]:
        """The system prompt and the first observation of a game on ``env``."""
        return start_messages(env, self.system_prompt, bool(self.show_surroundings))

    def feedback(self, action: int, result: StepResult, env: TextFrozenLake) -> str:
        """The user message after a move that did not end the game."""
        return feedback(action, result, env, bool(self.show_surroundings))


@dataclass
class EpisodeStats:
    """Counts over one episode, reported as experience metrics."""

    steps: int = 0
    invalid: int = 0
    effective: int = 0
    success: bool = False
    fell_in_hole: bool = False  # lost by a move into a hole, not by running out of moves
    context_full: bool = False

    def end(self, env: TextFrozenLake) -> None:
        """Record how the episode on ``env`` ended."""
        self.success = env.success()
        self.fell_in_hole = env.finished() and not self.success

    def metrics(self) -> dict[str, float]:
        steps = max(self.steps, 1)
        return {
            "success": float(self.success),
            "fell_in_hole": float(self.fell_in_hole),
            "env_steps": float(self.steps),
            "invalid_actions": float(self.invalid),
            "invalid_action_ratio": self.invalid / steps,
            "effective_action_ratio": self.effective / steps,
            "context_full": float(self.context_full),
        }


def demonstration(settings: FrozenLakeSettings) -> dict[str, Any]:
    """The conversation of an optimal player on this map, as ``frozen_lake_workflow``
    has it (same system prompt, observations and feedback), for supervised warm
    starts: ``{"messages": [...]}`` ending with the move that reaches the goal."""
    env = settings.make_env()
    messages = settings.start_messages(env)
    for action in frozen_lake_env.shortest_moves(env.desc):
        messages.append({"role": "assistant", "content": f"```{ACTION_NAMES[action]}```"})
        result = env.step(action)
        if result.done:
            break
        messages.append({"role": "user", "content": settings.feedback(action, result, env)})
    if not env.success():
        raise RuntimeError(f"the shortest walk on map {env.desc} did not reach the goal")
    return {"messages": messages}


@WORKFLOWS.register_module("frozen_lake_workflow")
class FrozenLakeWorkflow(MultiTurnWorkflow):
    """One FrozenLake game per run, as one multi-turn experience (see the module docstring)."""

    is_async = True
    can_reset = False
    can_repeat = False

    def __init__(
        self, *, task: Task, model: Any, auxiliary_models: list[Any] | None = None
    ) -> None:
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        self.settings = FrozenLakeSettings.from_task(task)
        self.env = self.settings.make_env()

    def success(self) -> bool:
        return self.env.success()

    def finished(self) -> bool:
        return self.env.finished()

    def render(self) -> str:
        return self.env.render()

    def env_step(self, action: int) -> tuple[str, float, bool, dict[str, bool]]:
        """One custom action (0-4): ``(observation, reward, done, info)``, Trinity's tuple."""
        result = self.env.step(action)
        info = {
            "action_is_valid": result.action_is_valid,
            "action_is_effective": result.action_is_effective,
        }
        return result.observation, result.reward, result.done, info

    def parse_action(self, reply: str) -> int:
        """The custom action (0-4) a reply asks for; override to change the answer format."""
        return frozen_lake_env.parse_action(reply)

    async def run_async(self) -> list[Experience]:
        self.env = self.settings.make_env()
        self.reset_turns()
        stats = EpisodeStats()
        messages = self.settings.start_messages(self.env)
        for _ in range(self.settings.max_steps):
            if self.context_full(messages[-1]["content"]):
                stats.context_full = True
                break
            reply = await self.get_model_response_text_async(messages)
            messages.append({"role": "assistant", "content": reply})
            action = self.parse_action(reply)
            result = self.env.step(action)
            stats.steps += 1
            stats.invalid += not result.action_is_valid
            stats.effective += result.action_is_effective
            if result.done:
                break
            messages.append(
                {"role": "user", "content": self.settings.feedback(action, result, self.env)}
            )
        stats.end(self.env)
        exps = self.process_messages_to_experiences(messages, float(stats.success), stats.metrics())
        for exp in exps:
            exp.info["map"] = list(self.env.desc)
            exp.info["seed"] = self.settings.seed
        return exps


@WORKFLOWS.register_module("step_wise_frozen_lake_workflow")
class StepWiseFrozenLakeWorkflow(StepWiseRewardWorkflow):
    """FrozenLake with one experience and one reward per move (see the module docstring)."""

    def __init__(
        self,
        *,
        task: Task,
        model: Any,
        auxiliary_models: list[Any] | None = None,
        use_openai_client: bool = False,
    ) -> None:
        super().__init__(
            task=task,
            model=model,
            auxiliary_models=auxiliary_models,
            use_openai_client=use_openai_client,
        )
        self.settings = FrozenLakeSettings.from_task(task)
        self._start()

    def _start(self) -> None:
        self.env = self.settings.make_env()
        self.messages = self.settings.start_messages(self.env)
        self.stats = EpisodeStats()
        self._step_reward = 0.0
        self._last_turn: Experience | None = None

    @property
    def max_step_num(self) -> int:
        return self.settings.max_steps

    def parse_action(self, reply: str) -> int:
        """The custom action (0-4) a reply asks for; override to change the answer format."""
        return frozen_lake_env.parse_action(reply)

    def step(self, step_num: int) -> bool:
        self.mark_state(self.env.render())  # the board this move is made on (for gigpo)
        pending = self.messages[-1]["content"]
        if context_full(self.model, self._last_turn, self.task.rollout_args.max_tokens, pending):
            self.stats.context_full = True
            self._step_reward = 0.0
            return False
        kwargs = rollout_kwargs(self.task.rollout_args)
        kwargs["n"] = 1
        (turn,) = self.model.chat(self.messages, **kwargs)
        self._last_turn = turn
        reply = turn.response_text or ""
        self.messages.append({"role": "assistant", "content": reply})
        action = self.parse_action(reply)
        result = self.env.step(action)
        self.stats.steps += 1
        self.stats.invalid += not result.action_is_valid
        self.stats.effective += result.action_is_effective
        penalty = 0.0 if result.action_is_valid else self.settings.invalid_action_penalty
        self._step_reward = result.reward + penalty
        if result.done:
            return False
        self.messages.append(
            {"role": "user", "content": self.settings.feedback(action, result, self.env)}
        )
        return True

    def reward(self, exps: list[Experience], step_num: int) -> float:
        return self._step_reward

    def run(self) -> list[Experience]:
        self._start()
        exps = super().run()
        self.stats.end(self.env)
        metrics = self.stats.metrics()
        for exp in exps:
            exp.metrics.update(metrics)
        return exps
