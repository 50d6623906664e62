"""``trinity.common.workflows.WebShopWorkflow`` and its module's helpers, used the way
Trinity-RFT code uses them: built with the keyword constructor from a task whose prompt
text is the session (goal) number, run once on the mock engine."""

from __future__ import annotations

import asyncio

from reinforge.models.engines.mock import MockEngine
from reinforge.trinity.common.config import FormatConfig, GenerationConfig
from reinforge.trinity.common.models.model import ModelWrapper
from reinforge.trinity.common.workflows import WORKFLOWS, Task, WebShopWorkflow
from reinforge.trinity.common.workflows.envs.webshop.webshop_workflow import (
    parse_action,
    validate_action,
)


def test_webshop_workflow_is_built_and_run_like_trinitys() -> None:
    assert WORKFLOWS.get("webshop_workflow") is WebShopWorkflow
    assert WebShopWorkflow.is_async and WebShopWorkflow.can_reset
    task = Task(
        workflow=WebShopWorkflow,
        format_args=FormatConfig(prompt_key="task_id"),
        rollout_args=GenerationConfig(temperature=1.0, max_tokens=200),
        raw_task={"task_id": "5"},
        workflow_args={"max_env_steps": 2},
    )
    reply = "<think>buy</think><action>click[Buy Now]</action>"  # no Buy Now on the start page
    model = ModelWrapper(MockEngine(replies=[reply], max_model_len=65536), enable_history=True)
    wf = WebShopWorkflow(model=model, task=task)
    (exp,) = asyncio.run(wf.run_async())
    assert exp.info["session_id"] == 5
    assert exp.reward == -0.1  # Trinity's reward for an episode that never bought
    wf.reset(task)  # can_reset


def test_parse_and_validate_action_like_trinitys() -> None:
    assert parse_action("<think>x</think><action> click[Buy Now] </action>") == "click[Buy Now]"
    assert parse_action("no tags") == ""
    page = {"has_search_bar": False, "clickables": ["back to search", "buy now"]}
    assert validate_action("click[Buy Now]", page) == (True, "")
    ok, message = validate_action("click[Checkout]", page)
    assert not ok and "['back to search', 'buy now']" in message
    assert not validate_action("search[socks]", page)[0]
    assert validate_action("search[socks]", {"has_search_bar": True, "clickables": []})[0]
    assert not validate_action("dance", page)[0]
