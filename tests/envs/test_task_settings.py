"""Environment settings come from task rows with their declared types: a CSV row or a
``--set`` gives strings, and ``"false"`` must not read as true in any environment."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from reinforge.core import Task
from reinforge.envs.alfworld.settings import AlfworldSettings
from reinforge.envs.frozen_lake.workflow import FrozenLakeSettings
from reinforge.envs.sciworld.workflow import SciWorldSettings
from reinforge.envs.task_settings import settings_from_task
from reinforge.envs.webshop.settings import WebShopSettings


@dataclass
class _Settings:
    steps: int = 3
    penalty: float = 0.0
    verbose: bool = False
    name: str | None = None


def test_values_take_their_declared_types_and_others_are_left_alone() -> None:
    row = {"steps": "5", "penalty": "-0.5", "verbose": "false", "name": Path("a/b")}
    got = settings_from_task(_Settings, {**row, "answer": "42", "steps_x": 1}, "toy", Task())
    assert got == _Settings(steps=5, penalty=-0.5, verbose=False, name="a/b")
    assert settings_from_task(_Settings, {"verbose": "true", "name": None}, "toy", Task()) == (
        _Settings(verbose=True)
    )


def test_a_bad_value_names_the_task_the_env_and_every_bad_setting() -> None:
    with pytest.raises(ValueError) as err:
        settings_from_task(
            _Settings, {"steps": "many", "verbose": "sometimes"}, "toy", Task(task_id="row-7")
        )
    message = str(err.value)
    assert "task 'row-7'" in message and "bad toy setting" in message
    assert "steps:" in message and "'many'" in message
    assert "verbose:" in message and "'sometimes'" in message
    assert "errors.pydantic.dev" not in message


@pytest.mark.parametrize(
    ("cls", "row", "flag"),
    [
        (FrozenLakeSettings, {}, "show_surroundings"),
        (WebShopSettings, {"session_id": "3"}, "sparse_reward"),
        (WebShopSettings, {"session_id": "3"}, "show_available_actions"),
        (AlfworldSettings, {"game": "any"}, "show_admissible_commands"),
    ],
)
def test_every_environment_reads_false_as_false(cls, row, flag) -> None:
    assert getattr(cls.from_task(Task(raw_task={**row, flag: "false"})), flag) is False
    assert getattr(cls.from_task(Task(raw_task={**row, flag: "true"})), flag) is True
    with pytest.raises(ValueError, match=f"bad .* setting .*{flag}"):
        cls.from_task(Task(task_id="t1", raw_task={**row, flag: "sometimes"}))


def test_numbers_from_text_rows() -> None:
    web = WebShopSettings.from_task(Task(raw_task={"goal_id": "4", "max_env_steps": "9"}))
    assert (web.session_id, web.max_env_steps) == (4, 9)
    alf = AlfworldSettings.from_task(
        Task(raw_task={"game_file": Path("x/game.tw-pddl"), "repeat_limit": "3"})
    )
    assert (alf.game_file, alf.repeat_limit) == ("x/game.tw-pddl", 3)
    sci = SciWorldSettings.from_task(Task(raw_task={"task_name": "boil", "variation": "2"}))
    assert (sci.variation, sci.max_steps) == (2, 30)
    with pytest.raises(ValueError, match=r"task 'r'.*sciworld.*variation"):
        SciWorldSettings.from_task(
            Task(task_id="r", raw_task={"task_name": "boil", "variation": "b"})
        )
    with pytest.raises(ValueError, match=r"task 'r'.*webshop.*max_env_steps"):
        WebShopSettings.from_task(
            Task(task_id="r", raw_task={"session_id": 1, "max_env_steps": 2.5})
        )
    with pytest.raises(ValueError, match=r"task 'r'.*webshop.*session_id.*'abc'"):
        WebShopSettings.from_task(Task(task_id="r", raw_task={"session_id": "abc"}))
