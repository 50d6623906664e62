"""What the FrozenLake agent is told: the rules, each observation, feedback on its move."""

from __future__ import annotations

from typing import Any

from reinforge.envs.frozen_lake.env import ACTION_NAMES, MOVES, StepResult, TextFrozenLake

TILE_NAMES = {"F": "ice", "S": "ice", "H": "hole", "G": "goal"}

SYSTEM_PROMPT = """You are playing FrozenLake on a square grid.
Symbols: P = you, _ = frozen ice (safe), O = hole, G = goal.
Walk to G without stepping on an O; moving into the edge leaves you in place.
Moves: Left, Down, Right, Up. Reaching G gives reward 1, a hole ends the game with 0.
Answer with one move inside triple backticks, for example ```Right```."""

SURROUNDINGS_RULE = (
    "Below the map you are told where the goal is from you and what one move in each "
    "direction reaches: ice, a hole, the goal or the edge."
)
ASK = "Which move do you make?"
INVALID = (
    "That reply names no valid move. Answer with one of Left, Down, Right, Up inside "
    "triple backticks, for example ```Left```."
)


def _count(n: int, unit: str, direction: str) -> str:
    return f"{n} {unit}{'s' if n > 1 else ''} {direction}"


def surroundings(env: TextFrozenLake) -> str:
    """Where the goal lies from the player and what each move reaches: the
    ``show_surroundings`` lines, which spare a small model from reading the grid cell
    by cell (what a 135M model failed to learn from a few hundred games)."""
    (row, col), (goal_row, goal_col) = env.position, env.goal
    offsets = []
    if goal_row != row:
        offsets.append(_count(abs(goal_row - row), "row", "down" if goal_row > row else "up"))
    if goal_col != col:
        offsets.append(_count(abs(goal_col - col), "column", "right" if goal_col > col else "left"))
    goal = f"The goal is {' and '.join(offsets)} of you." if offsets else "You are on the goal."
    reached = []
    for move in MOVES:
        tile = env.tile_after(move)
        reached.append(f"{ACTION_NAMES[move]} {TILE_NAMES[tile] if tile else 'edge'}")
    return f"{goal}\nOne move away: {', '.join(reached)}."


def observation(env: TextFrozenLake, show_surroundings: bool = False) -> str:
    """The map as the agent sees it, then the question."""
    around = f"{surroundings(env)}\n" if show_surroundings else ""
    return f"Current map:\n{env.render()}\n{around}{ASK}"


def feedback(
    action: int, result: StepResult, env: TextFrozenLake, show_surroundings: bool = False
) -> str:
    """The user message after a move that did not end the game."""
    if not result.action_is_valid:
        head = INVALID
    elif not result.action_is_effective:
        head = f"You chose {ACTION_NAMES[action]} but could not move that way."
    else:
        head = f"You moved {ACTION_NAMES[action]}."
    return f"{head}\n{observation(env, show_surroundings)}"


def start_messages(
    env: TextFrozenLake, system_prompt: str | None = None, show_surroundings: bool = False
) -> list[dict[str, Any]]:
    if not system_prompt:  # None or empty: the built-in rules
        system_prompt = (
            f"{SYSTEM_PROMPT}\n{SURROUNDINGS_RULE}" if show_surroundings else SYSTEM_PROMPT
        )
    return [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": observation(env, show_surroundings)},
    ]
