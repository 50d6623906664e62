"""What the FrozenLake agent is told: the rules, each observation, feedback on its move."""

from __future__ import annotations

from typing import Any

from reinforge.envs.frozen_lake.env import ACTION_NAMES, StepResult, TextFrozenLake

SYSTEM_PROMPT = """You are playing FrozenLake on a square grid.
Symbols: P = you, _ = frozen ice (safe), O = hole, G = goal.
Walk to G without stepping on an O; moving into the edge leaves you in place.
Moves: Left, Down, Right, Up. Reaching G gives reward 1, a hole ends the game with 0.
Answer with one move inside triple backticks, for example ```Right```."""

ASK = "Which move do you make?"
INVALID = (
    "That reply names no valid move. Answer with one of Left, Down, Right, Up inside "
    "triple backticks, for example ```Left```."
)


def first_observation(env: TextFrozenLake) -> str:
    return f"Current map:\n{env.render()}\n{ASK}"


def feedback(action: int, result: StepResult) -> str:
    """The user message after a move that did not end the game."""
    if not result.action_is_valid:
        head = INVALID
    elif not result.action_is_effective:
        head = f"You chose {ACTION_NAMES[action]} but could not move that way."
    else:
        head = f"You moved {ACTION_NAMES[action]}."
    return f"{head}\nCurrent map:\n{result.observation}\n{ASK}"


def start_messages(env: TextFrozenLake, system_prompt: str | None = None) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": system_prompt or SYSTEM_PROMPT},
        {"role": "user", "content": first_observation(env)},
    ]
