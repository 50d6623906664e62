"""sciworld_workflow: real ScienceWorld episodes driven by the scripted mock engine."""

from __future__ import annotations

import asyncio

import pytest

from reinforge.core import Task
from reinforge.envs import SciWorldWorkflow
from reinforge.envs.sciworld.env import POOL, parse_action
from reinforge.envs.sciworld.workflow import SciWorldSettings, score_to_reward
from reinforge.models import ModelWrapper
from reinforge.models.engines.mock import MockEngine
from reinforge.workflows import WORKFLOWS

# the scienceworld package and Java: without them skipped, failed under CI (tests/conftest.py)
needs_scienceworld = pytest.mark.needs("scienceworld")

TASK = {"task_name": "lifespan-longest-lived", "variation": 0}
# variation 0 (easy): the longest-lived animal outside is the brown bear
SOLUTION = ["```teleport to outside```", "Action: focus on baby baby brown bear"]


def _scripted(replies: list[str]) -> ModelWrapper:
    def reply(prompt: str, index: int) -> str:
        turn = prompt.count("<|im_start|>assistant") - 1
        return replies[min(turn, len(replies) - 1)]

    return ModelWrapper(MockEngine(replies=reply))


def _run(row: dict, model: ModelWrapper, **workflow_args: object) -> list:
    task = Task(workflow="sciworld_workflow", raw_task=row, workflow_args=workflow_args)
    return asyncio.run(task.to_workflow(model).run_async())


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("I should look. ```look around```", "look around"),
        ("```\nopen door to kitchen\n```", "open door to kitchen"),
        ("First ```a``` then ```pick up apple```", "pick up apple"),
        ("thinking...\nAction: go to kitchen", "go to kitchen"),
        ("wait1", "wait1"),
        ("   ", ""),
    ],
)
def test_parse_action(text: str, action: str) -> None:
    assert parse_action(text) == action


def test_settings_and_reward_scale() -> None:
    s = SciWorldSettings.from_task(
        Task(raw_task={"task": "boil", "variation": 3}, workflow_args={"max_steps": 5})
    )
    assert (s.task_name, s.variation, s.simplification, s.max_steps) == ("boil", 3, "easy", 5)
    with pytest.raises(ValueError, match="task_name"):
        SciWorldSettings.from_task(Task(raw_task={"variation": 1}))
    assert [score_to_reward(x) for x in (-100, 0, 50, 100)] == [0.0, 0.0, 0.5, 1.0]
    assert WORKFLOWS.get("sciworld_workflow") is SciWorldWorkflow


@needs_scienceworld
def test_scripted_agent_solves_a_task() -> None:
    model = _scripted(SOLUTION)
    (exp,) = _run(TASK, model, max_steps=5)
    assert exp.reward == 1.0
    assert exp.metrics["score"] == 100.0 and exp.metrics["success"] == 1.0
    assert exp.metrics["env_steps"] == 2.0 and exp.metrics["invalid_actions"] == 0.0
    assert exp.info["turns"] == 2 and exp.info["task_name"] == "lifespan-longest-lived"
    text = model.tokenizer.decode(exp.tokens.tolist(), skip_special_tokens=False)
    assert "longest life span" in text  # the task description reached the prompt
    assert "You teleport to the outside." in text  # the observation came back as a user turn
    assert not bool(exp.action_mask.all())


@needs_scienceworld
def test_invalid_actions_are_counted_and_the_run_stops_at_max_steps() -> None:
    model = _scripted(["```dance wildly```", "", "```teleport to outside```", "```wait1```"])
    (exp,) = _run(TASK, model, max_steps=4)
    assert exp.metrics["env_steps"] == 4.0
    assert exp.metrics["invalid_actions"] == 2.0  # an unknown command and an empty reply
    assert exp.metrics["score"] == 50.0 and exp.reward == 0.5  # halfway: reached the animals
    text = model.tokenizer.decode(exp.tokens.tolist(), skip_special_tokens=False)
    assert "No known action matches that input." in text and "held no action" in text


@needs_scienceworld
def test_unknown_task_fails_clearly_and_envs_are_reused() -> None:
    with pytest.raises(ValueError, match="Unknown taskName"):
        _run({"task_name": "juggle-planets"}, _scripted(["```look around```"]))
    _run(TASK, _scripted(["```look around```"]), max_steps=1)
    idle = len(POOL._idle)
    assert idle >= 1
    _run(TASK, _scripted(["```look around```"]), max_steps=1)
    assert len(POOL._idle) == idle  # the second episode took an idle env and gave it back
