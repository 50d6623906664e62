"""FrozenLake for text agents: random maps, gymnasium underneath, a text grid on top.

The agent's actions follow Trinity-RFT's numbering, which differs from gymnasium's:

| action | meaning | gymnasium action |
| --- | --- | --- |
| 0 | Still (also: what an unparseable reply becomes) | none, the env is not stepped |
| 1 | Left | 0 (LEFT) |
| 2 | Down | 1 (DOWN) |
| 3 | Right | 2 (RIGHT) |
| 4 | Up | 3 (UP) |

Rewards follow gymnasium's schedule: reaching the goal gives 1, a hole or a frozen
tile 0. Maps are generated from ``(size, p, seed)``: every tile is frozen with
probability ``p`` (else a hole), start and goal are two distinct frozen tiles, and
the map is redrawn until the goal is reachable from the start.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

import numpy as np

STILL, LEFT, DOWN, RIGHT, UP = range(5)
ACTION_NAMES = {STILL: "Still", LEFT: "Left", DOWN: "Down", RIGHT: "Right", UP: "Up"}
MOVES = (LEFT, DOWN, RIGHT, UP)
#: (row, column) offset of each move
MOVE_DELTAS = {LEFT: (0, -1), DOWN: (1, 0), RIGHT: (0, 1), UP: (-1, 0)}
# custom action -> gymnasium FrozenLakeEnv action
TO_GYM = {LEFT: 0, DOWN: 1, RIGHT: 2, UP: 3}
INVALID_ACTION = STILL

# tile letters in gymnasium maps -> text symbols shown to the agent
SYMBOLS = {b"F": "_", b"S": "_", b"H": "O", b"G": "G"}
PLAYER = "P"

_BACKTICKS = re.compile(r"```\s*([A-Za-z0-9]+)\s*```")
_BY_NAME = {name.lower(): action for action, name in ACTION_NAMES.items() if action != STILL}
_MOVE_WORD = re.compile(r"\b(left|down|right|up)\b", re.IGNORECASE)


def parse_action(text: str) -> int:
    """The action a reply asks for, or ``INVALID_ACTION`` (0) if it names none.

    The last ```Name``` block counts (a move name or its number 1-4). A reply with
    no such block falls back to the first move name it contains as a word
    (``"I go left."``), so that a small model that ignores the format still acts.
    """
    text = text or ""
    found = _BACKTICKS.findall(text)
    if found:
        word = found[-1].lower()
        if word.isdigit():
            return int(word) if int(word) in TO_GYM else INVALID_ACTION
        return _BY_NAME.get(word, INVALID_ACTION)
    match = _MOVE_WORD.search(text)
    return _BY_NAME[match.group(1).lower()] if match else INVALID_ACTION


def _reachable(grid: list[list[str]], start: tuple[int, int], goal: tuple[int, int]) -> bool:
    size = len(grid)
    seen = {start}
    todo = deque([start])
    while todo:
        r, c = todo.popleft()
        if (r, c) == goal:
            return True
        for dr, dc in MOVE_DELTAS.values():
            nr, nc = r + dr, c + dc
            if 0 <= nr < size and 0 <= nc < size and (nr, nc) not in seen and grid[nr][nc] != "H":
                seen.add((nr, nc))
                todo.append((nr, nc))
    return False


def shortest_moves(desc: list[str]) -> list[int]:
    """The moves (custom actions) of a shortest walk from S to G on a gymnasium map,
    ties broken in the order Left, Down, Right, Up; raises ``ValueError`` if G is
    unreachable."""
    size = len(desc)
    cells = [(r, c) for r in range(size) for c in range(size)]
    start = next(cell for cell in cells if desc[cell[0]][cell[1]] == "S")
    came_from: dict[tuple[int, int], tuple[tuple[int, int], int] | None] = {start: None}
    todo = deque([start])
    while todo:
        r, c = todo.popleft()
        if desc[r][c] == "G":
            moves: list[int] = []
            cell: tuple[int, int] = (r, c)
            while (link := came_from[cell]) is not None:
                cell, move = link
                moves.append(move)
            return moves[::-1]
        for move in MOVES:
            dr, dc = MOVE_DELTAS[move]
            nr, nc = r + dr, c + dc
            inside = 0 <= nr < size and 0 <= nc < size
            if inside and desc[nr][nc] != "H" and (nr, nc) not in came_from:
                came_from[(nr, nc)] = ((r, c), move)
                todo.append((nr, nc))
    raise ValueError(f"the goal of map {desc} cannot be reached")


def generate_map(size: int, p: float, seed: int, max_tries: int = 1000) -> list[str]:
    """A ``size`` x ``size`` gymnasium map (rows of S/F/H/G) with a reachable goal."""
    if size < 2:
        raise ValueError(f"frozen lake size must be at least 2, got {size}")
    if not 0 < p <= 1:
        raise ValueError(f"frozen lake p (probability of a frozen tile) must be in (0, 1], got {p}")
    rng = np.random.default_rng(seed)
    for _ in range(max_tries):
        grid = [["F" if rng.random() < p else "H" for _ in range(size)] for _ in range(size)]
        frozen = [(r, c) for r in range(size) for c in range(size) if grid[r][c] == "F"]
        if len(frozen) < 2:
            continue
        i, j = rng.choice(len(frozen), size=2, replace=False)
        start, goal = frozen[int(i)], frozen[int(j)]
        if _reachable(grid, start, goal):
            grid[start[0]][start[1]] = "S"
            grid[goal[0]][goal[1]] = "G"
            return ["".join(row) for row in grid]
    raise ValueError(f"no solvable {size}x{size} map with p={p} in {max_tries} tries (seed {seed})")


@dataclass
class StepResult:
    observation: str
    reward: float
    done: bool
    action_is_valid: bool
    action_is_effective: bool


class TextFrozenLake:
    """One FrozenLake episode seen as text."""

    def __init__(
        self,
        *,
        size: int = 4,
        p: float = 0.8,
        seed: int = 0,
        is_slippery: bool = False,
        desc: list[str] | None = None,
    ) -> None:
        # imported here: gymnasium takes a third of a second to import
        from reinforge.core.optional import require

        frozen_lake = require("gymnasium.envs.toy_text.frozen_lake", "gym", "FrozenLake")
        FrozenLakeEnv = frozen_lake.FrozenLakeEnv

        self.desc = list(desc) if desc else generate_map(size, p, seed)
        self.seed = seed
        self.env = FrozenLakeEnv(desc=self.desc, is_slippery=is_slippery)
        self.env.reset(seed=seed)
        self.total_reward = 0.0

    @property
    def position(self) -> tuple[int, int]:
        return divmod(int(self.env.s), int(self.env.ncol))

    @property
    def goal(self) -> tuple[int, int]:
        """``(row, column)`` of the goal tile."""
        for r, row in enumerate(self.desc):
            if "G" in row:
                return r, row.index("G")
        raise ValueError(f"map {self.desc} has no goal")

    def tile_after(self, move: int) -> str | None:
        """The map letter (S/F/H/G) one ``move`` away from the player, or ``None``
        past the edge."""
        (row, col), (dr, dc) = self.position, MOVE_DELTAS[move]
        r, c = row + dr, col + dc
        inside = 0 <= r < len(self.desc) and 0 <= c < len(self.desc[0])
        return self.desc[r][c] if inside else None

    def _tile(self) -> bytes:
        r, c = self.position
        return bytes(self.env.desc[r, c])

    def success(self) -> bool:
        """The player stands on the goal."""
        return self._tile() == b"G"

    def finished(self) -> bool:
        """The episode is over: the player is on the goal or in a hole."""
        return self._tile() in (b"G", b"H")

    def render(self) -> str:
        """The grid as text rows: P player, _ frozen, O hole, G goal."""
        pr, pc = self.position
        rows = []
        for r, row in enumerate(self.env.desc):
            cells = [PLAYER if (r, c) == (pr, pc) else SYMBOLS[bytes(t)] for c, t in enumerate(row)]
            rows.append(" ".join(cells))
        return "\n".join(rows)

    def step(self, action: int) -> StepResult:
        """Apply a custom action (0-4); ``Still`` and invalid actions leave the env as is."""
        if self.finished():
            raise RuntimeError("the episode is over; start a new TextFrozenLake")
        valid = action in TO_GYM
        before = self.position
        reward = 0.0
        if valid:
            _, r, _, _, _ = self.env.step(TO_GYM[action])
            reward = float(r)
        self.total_reward += reward
        return StepResult(
            observation=self.render(),
            reward=reward,
            done=self.finished(),
            action_is_valid=valid,
            action_is_effective=self.position != before,
        )
