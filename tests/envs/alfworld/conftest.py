"""The ALFWorld tests play real games on TextWorld's PDDL engine (the ``alfworld`` extra,
part of ``dev``); each module is marked ``needs("alfworld")``, so without the engine
they are skipped, and failed under CI (tests/conftest.py). ``player(mode)`` is a
mock-engine reply rule
``(prompt_text, index) -> reply`` that finds the game by its goal in the prompt:

* ``"win"``: plays the game's walkthrough, one command per observation so far;
* ``"lost"``: answers every observation with a command the game does not admit;
* ``"repeat"``: says ``look`` every time (the RAFT workflows stop it after three);
* ``"win_sloppy"``: the walkthrough, with the ``<experience>`` part RAFT asks for empty;
* ``"repeat_then_win"``: ``repeat`` on a first attempt, ``win`` on a reflecting retry.

``style="raft"`` writes the three-part replies of the RAFT workflows.
"""

from __future__ import annotations

import pytest

from reinforge.envs.alfworld import shipped_games

RETRY_MARK = "That was your first attempt"


def reply(action: str, style: str, experience: bool = True) -> str:
    if style == "raft":
        lesson = "Look where such objects are kept." if experience else ""
        lesson = f"<experience>{lesson}</experience>\n"
        return f"{lesson}<think>next</think>\n<action>{action}</action>"
    return f"<think>next</think><action>{action}</action>"


def game_in(prompt: str) -> dict:
    for game in shipped_games().values():
        if f"Your task is to: {game['goal']}." in prompt:
            return game
    raise AssertionError("no shipped game's goal in the prompt")


def make_player(mode: str, style: str = "think"):
    def answer(prompt: str, index: int) -> str:
        game = game_in(prompt)
        retry = RETRY_MARK in prompt
        own = prompt.split(RETRY_MARK)[-1]  # this attempt's part of the prompt
        step = own.count("Observation:") - 1
        if mode == "lost":
            return reply("fly to the moon", style)
        if mode == "repeat" or (mode == "repeat_then_win" and not retry):
            return reply("look", style)
        walk = game["walkthrough"]
        action = walk[step] if step < len(walk) else "look"
        return reply(action, style, experience=mode != "win_sloppy")

    return answer


@pytest.fixture
def player():
    return make_player
