"""An ALFWorld task's settings: which game, which environment, how long, how scored.

Settings come from the taskset row (``raw_task``) first, then ``workflow_args``:

* the game: ``game``, the name of a shipped game (``data/games.jsonl``), or
  ``game_file``, the path of an official ``game.tw-pddl`` (or of its directory). As
  in Trinity-RFT, a row may instead give it as its prompt text (``task_desc``): a
  shipped game's name or a file path;
* ``max_env_steps``: commands before the episode is cut (30; 50 for the RAFT
  workflows, as in Trinity-RFT);
* ``env`` (``"textworld"``, the real engine, or a ``package.module:factory``) and
  ``env_args``; ``env_timeout`` (30 s): the longest one call into the environment
  may take before the task fails;
* ``unfinished_reward`` (-0.1): the reward of an episode that did not win (the RAFT
  workflows score 0 / 1 and ignore it);
* ``show_admissible_commands`` (false): list the admissible commands under each
  observation (official ALFWorld agents are not shown them);
* ``system_prompt``: replaces the default (``{max_steps}`` is filled in);
* ``repeat_limit``: stop the episode when the last this-many commands are the same
  (0: never; 3 for the RAFT workflows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reinforge.core import Task
from reinforge.envs.alfworld.games import shipped_games
from reinforge.envs.task_settings import settings_from_task


@dataclass
class AlfworldSettings:
    game: str | None = None
    game_file: str | None = None
    max_env_steps: int = 30
    env: str = "textworld"
    env_args: dict[str, Any] = field(default_factory=dict)
    env_timeout: float = 30.0
    unfinished_reward: float = -0.1
    show_admissible_commands: bool = False
    system_prompt: str | None = None
    repeat_limit: int = 0

    @classmethod
    def from_task(cls, task: Task, **defaults: Any) -> AlfworldSettings:
        merged = {**defaults, **(task.workflow_args or {}), **(task.raw_task or {})}
        settings = settings_from_task(cls, merged, "alfworld", task)
        if settings.game is None and settings.game_file is None:
            settings._game_from_text(task)
        named = settings.game_file
        if settings.game is None and named in shipped_games() and not Path(named).exists():
            settings.game, settings.game_file = named, None  # Trinity's key, a shipped name
        if int(settings.max_env_steps) < 1:
            raise ValueError(
                f"alfworld max_env_steps must be at least 1, got {settings.max_env_steps}"
            )
        if float(settings.env_timeout) <= 0:
            raise ValueError(f"alfworld env_timeout must be positive, got {settings.env_timeout}")
        return settings

    def _game_from_text(self, task: Task) -> None:
        desc = task.task_desc
        text = "" if desc is None else str(desc).strip()
        if text in shipped_games():
            self.game = text
        elif text.endswith(".tw-pddl") or (text and Path(text).expanduser().exists()):
            self.game_file = text
        else:
            raise ValueError(
                f"task {task.task_id!r}: the row names no ALFWorld game: give `game` (a shipped "
                f"game's name) or `game_file` (a game.tw-pddl path); row keys: "
                f"{sorted(task.raw_task or {})}"
            )

    @property
    def label(self) -> str:
        """The game, for messages and ``info``."""
        return self.game if self.game is not None else str(self.game_file)
