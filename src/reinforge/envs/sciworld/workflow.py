"""``sciworld_workflow``: the policy works on a ScienceWorld task in text, one action per turn.

The task is a ScienceWorld task name (or id such as ``1-1``) and a variation; the
environment's observations come back as user messages, the model's replies are
parsed into action strings (the last ```...``` block, else the reply's last line),
and the run ends when the simulator says so or after ``max_steps`` actions. The
reward is the final ScienceWorld score scaled to [0, 1] (a failed task's negative
score counts as 0). The whole conversation becomes one multi-turn experience.

Settings come from the taskset row (``raw_task``) first, then ``workflow_args``:
``task_name`` (required; alias ``task``), ``variation`` (0), ``simplification``
(``"easy"``; ``""`` for none), ``max_steps`` (30), ``env_step_limit`` (100),
``system_prompt``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from reinforge.core import Experience, Task
from reinforge.envs.sciworld.env import NO_MATCH, POOL, parse_action
from reinforge.envs.task_settings import settings_from_task
from reinforge.workflows.multi_turn import MultiTurnWorkflow
from reinforge.workflows.workflow import WORKFLOWS

SYSTEM_PROMPT = """You are an agent in ScienceWorld, a text-based simulation of a small house \
with a kitchen, a workshop, a greenhouse and an outside area.
Each turn you read an observation and take one action. Actions are short commands built \
from the templates you are given, with OBJ replaced by an object or place you can see, \
for example: look around, go to kitchen, open door to kitchen, pick up thermometer, \
focus on red box, move apple to red box, teleport to outside, wait1.
Think briefly, then give exactly one action inside triple backticks, for example \
```look around```."""

EMPTY_REPLY = "Your reply held no action. Give one action inside triple backticks."


@dataclass
class SciWorldSettings:
    task_name: str = ""
    variation: int = 0
    simplification: str = "easy"
    max_steps: int = 30
    env_step_limit: int = 100
    system_prompt: str | None = None

    @classmethod
    def from_task(cls, task: Task) -> SciWorldSettings:
        merged = {**(task.workflow_args or {}), **(task.raw_task or {})}
        if not merged.get("task_name") and merged.get("task"):
            merged["task_name"] = merged["task"]
        settings = settings_from_task(cls, merged, "sciworld", task)
        if not settings.task_name:
            raise ValueError(
                f"task {task.task_id!r}: sciworld_workflow needs a ScienceWorld task name "
                "(`task_name` in the row or in workflow_args)"
            )
        if settings.max_steps < 1:
            raise ValueError(f"sciworld max_steps must be at least 1, got {settings.max_steps}")
        return settings


def score_to_reward(score: float) -> float:
    """ScienceWorld scores run 0..100 (negative when the task failed): reward in [0, 1]."""
    return min(max(float(score), 0.0), 100.0) / 100.0


@WORKFLOWS.register_module("sciworld_workflow")
class SciWorldWorkflow(MultiTurnWorkflow):
    """One ScienceWorld episode per run (see the module docstring)."""

    is_async = True
    can_reset = False
    can_repeat = False

    def __init__(
        self, *, task: Task, model: Any, auxiliary_models: list[Any] | None = None
    ) -> None:
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        self.settings = SciWorldSettings.from_task(task)

    def _first_message(self, env: Any, observation: str) -> str:
        templates = ", ".join(env.get_possible_actions())
        return (
            f"Task: {env.get_task_description()}\n"
            f"Action templates: {templates}\n"
            f"Observation: {observation}\nWhat is your next action?"
        )

    async def run_async(self) -> list[Experience]:
        s = self.settings
        self.reset_turns()
        with POOL.env(s.env_step_limit) as env:
            await asyncio.to_thread(env.load, s.task_name, int(s.variation), s.simplification)
            observation, _ = await asyncio.to_thread(env.reset)
            first = await asyncio.to_thread(self._first_message, env, observation)
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": s.system_prompt or SYSTEM_PROMPT},
                {"role": "user", "content": first},
            ]
            score, steps, invalid, done, context_full = 0.0, 0, 0, False, False
            for _ in range(s.max_steps):
                if self.context_full(messages[-1]["content"]):
                    context_full = True
                    break
                reply = await self.get_model_response_text_async(messages)
                messages.append({"role": "assistant", "content": reply})
                action = parse_action(reply)
                steps += 1
                if not action:
                    invalid += 1
                    observation = EMPTY_REPLY
                else:
                    observation, _, done, info = await asyncio.to_thread(env.step, action)
                    score = float(info.get("score", score))
                    invalid += observation.strip().startswith(NO_MATCH)
                if done:
                    break
                messages.append(
                    {
                        "role": "user",
                        "content": f"Observation: {observation}\nWhat is your next action?",
                    }
                )
        info = {
            "score": score,
            "success": float(score >= 100),
            "env_steps": float(steps),
            "invalid_actions": float(invalid),
            "invalid_action_ratio": invalid / max(steps, 1),
            "context_full": float(context_full),
            "task_name": s.task_name,
            "variation": int(s.variation),
        }
        return self.process_messages_to_experiences(messages, score_to_reward(score), info)
