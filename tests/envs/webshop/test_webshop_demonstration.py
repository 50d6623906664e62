"""The oracle shopper's demonstrations: each buys the goal's product with its options for
the full reward, and is, message for message, the conversation ``webshop_workflow``
has when the policy writes the oracle's replies."""

from __future__ import annotations

import asyncio

import pytest

from reinforge.core import Task
from reinforge.envs.webshop import Catalogue, CatalogueWebShopEnv
from reinforge.envs.webshop.demonstration import (
    demonstration,
    new_goals,
    search_query,
    steps_needed,
)
from reinforge.envs.webshop.prompts import parse_action
from reinforge.envs.webshop.settings import WebShopSettings
from reinforge.models import ModelWrapper
from reinforge.models.engines.mock import MockEngine


def _replay(row: dict, replies: list[str], max_env_steps: int) -> list:
    """Run ``webshop_workflow`` on ``row`` with a mock policy that writes ``replies``."""
    turn = iter(replies)
    engine = MockEngine(replies=lambda prompt, i: next(turn), max_model_len=65536)
    task = Task(
        workflow="webshop_workflow",
        raw_task=row,
        workflow_args={"max_env_steps": max_env_steps},
    )
    task.rollout_args.max_tokens = 1024  # the mock engine's tokens are bytes
    model = ModelWrapper(engine, enable_history=True)
    return asyncio.run(task.to_workflow(model).run_async())


def test_search_query_drops_the_lead_in_and_the_budget() -> None:
    text = "i'm looking for slim fit phone case in iphone 13, and price lower than 30.00 dollars"
    assert search_query(text) == "slim fit phone case in iphone 13"


@pytest.mark.parametrize("goal_id", [0, 1, 2, 3, 17])
def test_the_workflow_has_the_oracles_conversation_and_earns_one(goal_id: int) -> None:
    steps = 8
    demo = demonstration(WebShopSettings(session_id=goal_id, max_env_steps=steps))
    assert demo["reward"] == pytest.approx(1.0)
    replies = [m["content"] for m in demo["messages"] if m["role"] == "assistant"]
    assert all(parse_action(r) for r in replies) and "click[Buy Now]" in replies[-1]
    (exp,) = _replay({"session_id": goal_id}, replies, steps)
    assert exp.reward == pytest.approx(1.0) and exp.metrics["success"] == 1.0
    assert exp.metrics["invalid_actions"] == 0.0
    assert exp.info["termination_reason"] == "env_done"
    assert exp.messages == demo["messages"]


def test_every_shipped_goal_is_bought_for_the_full_reward_within_six_actions() -> None:
    catalogue = Catalogue.default()
    env = CatalogueWebShopEnv(catalogue)
    for goal in catalogue.goals:
        assert steps_needed(catalogue, goal) <= 6
        demo = demonstration(WebShopSettings(goal=goal, max_env_steps=6))
        assert demo["reward"] == pytest.approx(1.0), goal["goal_id"]
        # and replayed through the environment directly, the same purchase
        env.reset(session=goal)
        actions = [parse_action(m["content"]) for m in demo["messages"] if m["role"] == "assistant"]
        for action in actions[:-1]:
            assert env.step(action)[2] is False
        assert env.step(actions[-1])[1:3] == (pytest.approx(1.0), True)


def test_new_goals_are_new_and_demonstrated_by_goal_object() -> None:
    catalogue = Catalogue.default()
    asins = [g["asin"] for g in catalogue.goals[50:60]]
    goals = new_goals(catalogue, asins, 12, seed=3)
    assert len(goals) == 12 and {g["asin"] for g in goals} <= set(asins)
    shipped = {g["instruction_text"] for g in catalogue.goals}
    assert len({g["instruction_text"] for g in goals}) == 12
    for goal in goals:
        assert goal["goal_id"] is None and goal["instruction_text"] not in shipped
        assert set(goal["attributes"]) <= set(catalogue.product(goal["asin"]).attributes)
        same = [g for g in catalogue.goals if g["asin"] == goal["asin"]]
        assert all(
            (g["attributes"], g["goal_options"]) != (goal["attributes"], goal["goal_options"])
            for g in same
        )
    assert new_goals(catalogue, asins, 12, seed=3) == goals  # deterministic
    goal = goals[0]
    demo = demonstration(WebShopSettings(goal=goal, max_env_steps=6))
    replies = [m["content"] for m in demo["messages"] if m["role"] == "assistant"]
    (exp,) = _replay({"goal": goal}, replies, 6)
    assert exp.reward == pytest.approx(1.0) and exp.messages == demo["messages"]


def test_too_few_steps_raise() -> None:
    goal = next(g for g in Catalogue.default().goals if len(g["goal_options"]) == 2)
    with pytest.raises(RuntimeError, match="max_env_steps=4"):
        demonstration(WebShopSettings(goal=goal, max_env_steps=4))
