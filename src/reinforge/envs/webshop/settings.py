"""A WebShop task's settings: which goal, which environment, how long, how scored.

Settings come from the taskset row (``raw_task``) first, then ``workflow_args``:

* the goal: ``session_id`` (alias ``goal_id``), a goal number of the catalogue (as
  Trinity-RFT, a row may instead give it as its prompt text, ``task_desc``), or
  ``goal``, a goal object (``asin``, ``instruction_text``, ``attributes``,
  ``goal_options``, ``price_upper``, ...);
* ``max_env_steps`` (15, Trinity-RFT's): actions before the episode is cut;
* ``env`` (``"catalogue"``; ``"web_agent_site"`` or a dotted factory path, see
  ``env.make_env``) and ``env_args``; ``env_timeout`` (30 s): the longest any one
  call into the environment may take before the task fails;
* ``unfinished_reward`` (-0.1, Trinity-RFT's): the reward of an episode that never
  bought anything; ``sparse_reward`` (false): turn the purchase reward into 1
  (≥ 0.99) or 0;
* ``show_available_actions`` (true): list the valid actions under each observation;
* ``system_prompt``: replaces the default (``{max_steps}`` is filled in).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reinforge.core import Task
from reinforge.envs.task_settings import settings_from_task


@dataclass
class WebShopSettings:
    session_id: int | None = None
    goal: dict[str, Any] | None = None
    max_env_steps: int = 15
    env: str = "catalogue"
    env_args: dict[str, Any] = field(default_factory=dict)
    env_timeout: float = 30.0
    unfinished_reward: float = -0.1
    sparse_reward: bool = False
    show_available_actions: bool = True
    system_prompt: str | None = None

    @classmethod
    def from_task(cls, task: Task) -> WebShopSettings:
        merged = {**(task.workflow_args or {}), **(task.raw_task or {})}
        if merged.get("session_id") is None and merged.get("goal_id") is not None:
            merged["session_id"] = merged["goal_id"]
        settings = settings_from_task(cls, merged, "webshop", task)
        if settings.goal is None and settings.session_id is None:
            settings.session_id = _session_from_text(task)
        if int(settings.max_env_steps) < 1:
            raise ValueError(
                f"webshop max_env_steps must be at least 1, got {settings.max_env_steps}"
            )
        if float(settings.env_timeout) <= 0:
            raise ValueError(f"webshop env_timeout must be positive, got {settings.env_timeout}")
        return settings

    @property
    def session(self) -> int | dict[str, Any]:
        """What ``env.reset(session=...)`` gets: the goal object, else its number."""
        if self.goal is not None:
            return self.goal
        assert self.session_id is not None
        return self.session_id


def _session_from_text(task: Task) -> int:
    desc = task.task_desc
    text = "" if desc is None else str(desc).strip()
    if text.isdigit():
        return int(text)
    raise ValueError(
        f"task {task.task_id!r}: the row names no WebShop goal: give `session_id` (a goal "
        f"number) or `goal` (a goal object); row keys: {sorted(task.raw_task or {})}"
    )
