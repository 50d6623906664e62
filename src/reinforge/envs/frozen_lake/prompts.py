"""What the FrozenLake agent is told: the rules, each observation, feedback on its move."""

from __future__ import annotations

from typing import Any

from reinforge.envs.frozen_lake.env import ACTION_NAMES, StepResult, TextFrozenLake

SYSTEM_PROMPT = """You are playing FrozenLake on a square grid.
Symbols: P = you, _ = frozen ice (safe), O = hole, G = goal.
Walk to G without stepping on an O; moving into the edge leaves you in place.
Moves: Left, Down, Right, Up. Reaching G gives reward 1, a hole ends the game with 0.
Answer with one move inside triple backticks, for example ```Right```."""

POSITIONS_RULE = (
    "Rows count from the top and columns from the left: Down adds one to your row, "
    "Right adds one to your column."
)
ASK = "Which move do you make?"
INVALID = (
    "That reply names no valid move. Answer with one of Left, Down, Right, Up inside "
    "triple backticks, for example ```Left```."
)


def positions(env: TextFrozenLake) -> str:
    """Where the player and the goal stand, 1-based: the ``show_positions`` line, which
    spares a small model from counting grid cells to find them."""
    (row, col), (goal_row, goal_col) = env.position, env.goal
    return (
        f"You are at row {row + 1}, column {col + 1}; "
        f"the goal is at row {goal_row + 1}, column {goal_col + 1}."
    )


def observation(env: TextFrozenLake, show_positions: bool = False) -> str:
    """The map as the agent sees it, then the question."""
    where = f"{positions(env)}\n" if show_positions else ""
    return f"Current map:\n{env.render()}\n{where}{ASK}"


def feedback(
    action: int, result: StepResult, env: TextFrozenLake, show_positions: bool = False
) -> str:
    """The user message after a move that did not end the game."""
    if not result.action_is_valid:
        head = INVALID
    elif not result.action_is_effective:
        head = f"You chose {ACTION_NAMES[action]} but could not move that way."
    else:
        head = f"You moved {ACTION_NAMES[action]}."
    return f"{head}\n{observation(env, show_positions)}"


def start_messages(
    env: TextFrozenLake, system_prompt: str | None = None, show_positions: bool = False
) -> list[dict[str, Any]]:
    if system_prompt is None:
        system_prompt = f"{SYSTEM_PROMPT}\n{POSITIONS_RULE}" if show_positions else SYSTEM_PROMPT
    return [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": observation(env, show_positions)},
    ]
