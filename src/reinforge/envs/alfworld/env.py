"""The ALFWorld environment a workflow plays: its interface, and the real engine behind it.

An environment plays one game (see ``games.py``) through the interface of the gym
environment Trinity-RFT builds with ``textworld.gym``:

* ``reset() -> (observation, info)``: the game's opening text (the room, then
  ``Your task is to: ...``);
* ``step(command) -> (observation, reward, done, info)``: a command must be one of
  the admissible ones word for word, otherwise the observation is ``Nothing
  happens.`` and nothing changes; ``reward`` is 1 and ``done`` true once the goal
  holds;
* ``close()``.

``info`` holds ``admissible_commands`` (sorted) and ``won``.

``TextWorldAlfworldEnv`` is the real engine: TextWorld's ``PddlEnv`` (the PDDL state
kept by Fast Downward) behind ALFWorld's ``AlfredDemangler``, which names entities as
the official games do (``cabinet 1``). It needs the ``alfworld`` extra. Unlike
``textworld.gym`` it sets no step limit of its own: the workflow's ``max_env_steps``
is the limit. TextWorld's PDDL parsing and Fast Downward's translator keep
module-level state, so concurrent games in one process (the explorer runs many
workflows on threads) take turns: every engine call holds one process-wide lock.
Each call is short (loading a game takes about half a second, a step a few
milliseconds). ``make_env`` builds the environment a task asks for.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any, Protocol

#: serialises calls into the TextWorld engine (module docstring)
ENGINE_LOCK = threading.RLock()


class AlfworldEnv(Protocol):
    """What an ALFWorld workflow needs of an environment."""

    def reset(self) -> tuple[str, dict[str, Any]]: ...

    def step(self, command: str) -> tuple[str, float, bool, dict[str, Any]]: ...

    def close(self) -> None: ...


def _engine() -> tuple[Any, Any, Any]:
    try:
        import textworld
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler
        from textworld.envs.pddl import PddlEnv
    except ImportError as err:
        raise ImportError(
            "the ALFWorld environment needs TextWorld and ALFWorld: "
            f"pip install 'reinforge[alfworld]' ({err})"
        ) from err
    return textworld, PddlEnv, AlfredDemangler


class TextWorldAlfworldEnv:
    """One ALFWorld game on the real TextWorld PDDL engine (module docstring)."""

    def __init__(self, game: dict[str, Any]) -> None:
        textworld, pddl_env, demangler = _engine()
        infos = textworld.EnvInfos(admissible_commands=True, won=True, feedback=True)
        with ENGINE_LOCK:
            self._env = demangler(pddl_env(infos))
            self._env.load(game)  # parses the domain, grammar and problem; raises on bad ones
        self._closed = False

    @staticmethod
    def _info(state: Any) -> dict[str, Any]:
        return {
            "admissible_commands": list(state.get("admissible_commands") or []),
            "won": bool(state.get("won")),
        }

    def reset(self) -> tuple[str, dict[str, Any]]:
        with ENGINE_LOCK:
            state = self._env.reset()
        return str(state.feedback), self._info(state)

    def step(self, command: str) -> tuple[str, float, bool, dict[str, Any]]:
        with ENGINE_LOCK:
            state, score, done = self._env.step(command)
        return str(state.feedback), float(score), bool(done), self._info(state)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            with ENGINE_LOCK:
                self._env.close()


def make_env(name: str, game: dict[str, Any], **env_args: Any) -> AlfworldEnv:
    """The environment ``name`` playing ``game``: ``"textworld"`` (the real engine), or
    ``"package.module:factory"`` / ``"package.module.factory"``, called as
    ``factory(game=game, **env_args)`` (another engine, or a stand-in in tests)."""
    if name == "textworld":
        if env_args:
            raise ValueError(
                f"the textworld ALFWorld env takes no env_args, got {sorted(env_args)}"
            )
        return TextWorldAlfworldEnv(game)
    module, sep, attr = name.partition(":")
    if not sep:
        module, _, attr = name.rpartition(".")
    if not module or not attr:
        raise ValueError(
            f"unknown ALFWorld env {name!r}: use 'textworld' or 'package.module:factory'"
        )
    factory = getattr(importlib.import_module(module), attr)
    return factory(game=game, **env_args)
