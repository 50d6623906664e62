"""``trinity.common.workflows`` ALFWorld workflows and their modules' helpers, used the way
Trinity-RFT code uses them: the keyword constructor on a task whose prompt text names
the game, run once on the mock engine against the real TextWorld engine."""

from __future__ import annotations

import asyncio

import pytest

from reinforge.models.engines.mock import MockEngine
from reinforge.trinity.common.config import FormatConfig, GenerationConfig
from reinforge.trinity.common.models.model import ModelWrapper
from reinforge.trinity.common.workflows import (
    WORKFLOWS,
    AlfworldWorkflow,
    RAFTAlfworldWorkflow,
    RAFTReflectAlfworldWorkflow,
    StepWiseAlfworldWorkflow,
    Task,
)
from reinforge.trinity.common.workflows.envs.alfworld.alfworld_workflow import (
    format_observation,
    parse_action,
)
from reinforge.trinity.common.workflows.envs.alfworld.RAFT_alfworld_workflow import (
    parse_response,
)


def test_names_and_helpers_like_trinitys() -> None:
    assert WORKFLOWS.get("alfworld_workflow") is AlfworldWorkflow
    assert WORKFLOWS.get("step_wise_alfworld_workflow") is StepWiseAlfworldWorkflow
    assert WORKFLOWS.get("RAFT_alfworld_workflow") is RAFTAlfworldWorkflow
    assert WORKFLOWS.get("RAFT_reflect_alfworld_workflow") is RAFTReflectAlfworldWorkflow
    assert parse_action("<think>x</think><action> look </action>") == "look"
    assert parse_action("no tags") == ""
    assert format_observation("You arrive at desk 1.") == "Observation: You arrive at desk 1."
    assert format_observation("Nothing happens.").startswith("Observation: Nothing happens. Check")
    parts = parse_response("<experience>e</experience><think>t</think><action>a</action>")
    assert parts == {"experience": "e", "think": "t", "action": "a"}


@pytest.mark.needs("alfworld")
def test_alfworld_workflow_is_built_and_run_like_trinitys() -> None:
    assert AlfworldWorkflow.is_async and AlfworldWorkflow.can_reset
    task = Task(
        workflow=AlfworldWorkflow,
        format_args=FormatConfig(prompt_key="game_file"),
        rollout_args=GenerationConfig(temperature=1.0, max_tokens=200),
        raw_task={"game_file": "look_at_obj_in_light-1"},  # a shipped game's name
        workflow_args={"max_env_steps": 2},
    )
    reply = "<think>look</think><action>look</action>"
    model = ModelWrapper(MockEngine(replies=[reply], max_model_len=65536), enable_history=True)
    wf = AlfworldWorkflow(model=model, task=task)
    (exp,) = asyncio.run(wf.run_async())
    assert exp.info["game"] == "look_at_obj_in_light-1"
    assert exp.reward == -0.1  # Trinity's reward for an episode that did not finish
    wf.reset(task)  # can_reset
