"""The shipped ALFWorld games on the real TextWorld engine: each is won by its walkthrough
(and only at its last command), the six task types are covered, an inadmissible command
changes nothing, a shipped game written out as a ``game.tw-pddl`` file loads by its folder
and plays the same, and bad games are refused with a reason. No official ALFWorld game
is played here (they are not shipped): what is tested is reading the file format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reinforge.envs.alfworld import (
    AlfworldGameError,
    TextWorldAlfworldEnv,
    game_file,
    make_env,
    shipped_game,
    shipped_games,
)
from reinforge.envs.alfworld.games import DATA, goal_of
from reinforge.envs.alfworld.scenes import TASK_TYPES

# the real engine (the alfworld extra): without it skipped, failed under CI (tests/conftest.py)
pytestmark = pytest.mark.needs("alfworld")


def _play(env, commands: list[str]) -> list[tuple[str, float, bool]]:
    return [env.step(c)[:3] for c in commands]


@pytest.mark.parametrize("name", sorted(shipped_games()))
def test_each_shipped_game_is_won_by_its_walkthrough(name: str) -> None:
    game = shipped_game(name)
    env = TextWorldAlfworldEnv(game)
    try:
        intro, info = env.reset()
        assert f"Your task is to: {shipped_games()[name]['goal']}." in intro
        assert not info["won"] and info["admissible_commands"]
        steps = _play(env, game["walkthrough"])
    finally:
        env.close()
    assert all("Nothing happens." not in obs for obs, _, _ in steps)
    assert [done for _, _, done in steps] == [False] * (len(steps) - 1) + [True]
    assert steps[-1][1] == 1.0


def test_the_games_cover_the_six_task_types_in_under_a_megabyte() -> None:
    games = shipped_games().values()
    per_type = {t: sum(g["task_type"] == t for g in games) for t in TASK_TYPES}
    assert all(2 <= n <= 3 for n in per_type.values()), per_type
    assert {g["split"] for g in games} == {"train", "test"}
    size = sum(f.stat().st_size for f in DATA.rglob("*") if f.is_file())
    assert size < 1_000_000


def test_an_inadmissible_command_changes_nothing() -> None:
    env = make_env("textworld", shipped_game("pick_cool_then_place_in_recep-0"))
    try:
        env.reset()
        obs, reward, done, info = env.step("take apple 1 from diningtable 1")  # not there yet
        assert obs == "Nothing happens." and reward == 0.0 and not done
        assert "take apple 1 from diningtable 1" not in info["admissible_commands"]
        assert "go to diningtable 1" in info["admissible_commands"]
    finally:
        env.close()


def test_a_shipped_game_written_as_a_game_file_loads_by_folder_and_plays_the_same(
    tmp_path: Path,
) -> None:
    """A shipped game's ``pddl_domain``, ``grammar`` and ``pddl_problem`` written as a
    ``game.tw-pddl`` JSON file in a ``<task>/trial_0`` folder, the layout
    ``alfworld-download`` produces, is found from its folder and plays as the shipped
    game does. This checks how reinforge reads such a file, not that an official game
    (ALFRED's scenes, larger problems) plays: none has been tried."""
    game = shipped_game("pick_two_obj_and_place-0")
    folder = tmp_path / "pick_two_obj_and_place-CellPhone-None-Dresser-1" / "trial_0"
    folder.mkdir(parents=True)
    record = {k: game[k] for k in ("pddl_domain", "grammar", "pddl_problem")}
    (folder / "game.tw-pddl").write_text(json.dumps({**record, "solvable": True}))
    loaded = game_file(folder)  # a directory means its game.tw-pddl
    assert goal_of(loaded) == "put two cellphone in dresser"
    env = TextWorldAlfworldEnv(loaded)
    try:
        env.reset()
        assert _play(env, game["walkthrough"])[-1][1:] == (1.0, True)
    finally:
        env.close()


def test_bad_games_are_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(AlfworldGameError, match="unknown ALFWorld game 'no-such-game'"):
        shipped_game("no-such-game")
    with pytest.raises(AlfworldGameError, match="no ALFWorld game file"):
        game_file(tmp_path / "missing.tw-pddl")
    bad = tmp_path / "bad.tw-pddl"
    bad.write_text(json.dumps({"grammar": "x"}))
    with pytest.raises(AlfworldGameError, match="lacks pddl_domain, pddl_problem"):
        game_file(bad)
    bad.write_text("{not json")
    with pytest.raises(AlfworldGameError, match="cannot read"):
        game_file(bad)
    broken = {**shipped_game("pick_and_place_simple-0"), "pddl_problem": "(define (problem x"}
    with pytest.raises(Exception):  # noqa: B017 - the engine's own parse error
        TextWorldAlfworldEnv(broken)
