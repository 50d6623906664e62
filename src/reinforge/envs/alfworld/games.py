"""ALFWorld games: the shipped ones by name, the official ones by file.

A game is what TextWorld's ``PddlEnv`` loads: a mapping with ``pddl_domain``,
``grammar`` (the text grammar with the goal sentence filled in) and
``pddl_problem``. An official game is a ``game.tw-pddl`` file holding that mapping
as JSON (``alfworld-download`` puts them under ``$ALFWORLD_DATA/json_2.1.1/``). A
shipped game (``data/games.jsonl``, built by ``generate.py``) is a problem file plus
its goal; its domain and grammar are the ones the ``alfworld`` package ships, read
when the game is loaded.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
GAME_KEYS = ("pddl_domain", "grammar", "pddl_problem")
GOAL_PLACEHOLDER = "UNKNOWN GOAL"


class AlfworldGameError(ValueError):
    """A game that does not exist or cannot be read; its task fails with this message."""


@cache
def shipped_games() -> dict[str, dict[str, Any]]:
    """The shipped games' index rows by name (``name``, ``task_type``, ``goal``,
    ``split``, ``problem``, ``walkthrough``)."""
    rows = [json.loads(line) for line in (DATA / "games.jsonl").read_text().splitlines() if line]
    return {row["name"]: row for row in rows}


@cache
def alfworld_logic() -> tuple[str, str]:
    """The ALFRED PDDL domain and text grammar from the installed ``alfworld`` package."""
    try:
        from alfworld.info import ALFRED_PDDL_PATH, ALFRED_TWL2_PATH
    except ImportError as err:
        raise ImportError(
            "the ALFWorld games need the alfworld package: pip install 'reinforge[alfworld]' "
            f"({err})"
        ) from err
    return Path(ALFRED_PDDL_PATH).read_text(), Path(ALFRED_TWL2_PATH).read_text()


def shipped_game(name: str) -> dict[str, Any]:
    """The game data of the shipped game ``name``."""
    row = shipped_games().get(name)
    if row is None:
        known = ", ".join(sorted(shipped_games()))
        raise AlfworldGameError(f"unknown ALFWorld game {name!r}; the shipped games are: {known}")
    domain, grammar = alfworld_logic()
    return {
        "pddl_domain": domain,
        "grammar": grammar.replace(GOAL_PLACEHOLDER, row["goal"]),
        "pddl_problem": (DATA / row["problem"]).read_text(),
        "walkthrough": list(row["walkthrough"]),
    }


def game_file(path: str | Path) -> dict[str, Any]:
    """The game data of a ``game.tw-pddl`` file (a directory means its ``game.tw-pddl``)."""
    file = Path(path).expanduser()
    if file.is_dir():
        file = file / "game.tw-pddl"
    if not file.is_file():
        raise AlfworldGameError(f"no ALFWorld game file at {str(file)!r}")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise AlfworldGameError(f"cannot read ALFWorld game file {str(file)!r}: {err}") from err
    missing = [k for k in GAME_KEYS if not isinstance(data, dict) or not data.get(k)]
    if missing:
        raise AlfworldGameError(
            f"{str(file)!r} is not an ALFWorld game file: it lacks {', '.join(missing)}"
        )
    return data


def goal_of(game: dict[str, Any]) -> str:
    """The goal sentence a game's grammar holds ("" when it has none)."""
    marker = "Your task is to: "
    grammar = str(game.get("grammar", ""))
    start = grammar.find(marker)
    if start < 0:
        return ""
    end = grammar.find('"', start)
    return grammar[start + len(marker) : end].rstrip(".") if end > 0 else ""
