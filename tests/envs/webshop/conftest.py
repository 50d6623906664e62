"""A scripted WebShop shopper for the mock engine, shared by the WebShop tests.

The ``shopper`` fixture is ``make_shopper``: ``make_shopper(mode)`` returns a mock reply rule ``(prompt_text, index) -> reply`` that
reads the last observation in the prompt and acts on it:

* ``"buy_target"``: search the instruction, open the goal's product, choose the
  goal's options, buy (reward 1);
* ``"buy_first"``: search, buy the first result that is not the goal's product;
* ``"mumble"``: never writes an ``<action>`` (the episode runs out of steps);
* ``"bad_click"``: clicks a button that is not on the page, then behaves as ``buy_target``.
"""

from __future__ import annotations

import re

import pytest

from reinforge.envs.webshop import Catalogue

BUTTON = re.compile(r"\[button\] (.+?) \[button_\]")


def act(action: str) -> str:
    return f"<think>next step</think><action>{action}</action>"


def _goal_of(prompt: str) -> dict:
    for goal in Catalogue.default().goals:
        if goal["instruction_text"] in prompt:
            return goal
    raise AssertionError("no known instruction in the prompt")


def make_shopper(mode: str):
    def reply(prompt: str, index: int) -> str:
        if mode == "mumble":
            return "I am not sure what to do."
        goal = _goal_of(prompt)
        pages = [p for p in prompt.split("Observation:")[1:] if "[button] " in p]
        page = pages[-1]  # the last page shown (an invalid action's answer is no page)
        if mode == "bad_click" and "Invalid action" not in prompt:
            return act("click[Checkout]")
        if "[button] Search [button_]" in page:
            return act(f"search[{goal['instruction_text'].split(',')[0]}]")
        if "Page " in page and "(Total results" in page:
            asins = [b for b in BUTTON.findall(page) if re.fullmatch(r"B0[A-Z0-9]{8}", b)]
            if mode == "buy_first":
                return act(f"click[{next(a for a in asins if a != goal['asin'])}]")
            assert goal["asin"] in asins, "the goal's product is not on the first page"
            return act(f"click[{goal['asin']}]")
        if "[button] Buy Now [button_]" in page:
            if mode != "buy_first":
                for value in goal["goal_options"].values():
                    if f"[clicked button] {value} [clicked button_]" not in page:
                        return act(f"click[{value}]")
            return act("click[Buy Now]")
        return act("click[Back to Search]")

    return reply


@pytest.fixture
def shopper():
    return make_shopper
