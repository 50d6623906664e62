"""``SimpleMMWorkflow``: the row's images into the user message, as Trinity-RFT builds it."""

from __future__ import annotations

import pytest

from reinforge.core import FormatConfig, Task
from reinforge.models.vision import MediaInputError
from reinforge.trinity.common.workflows import (
    AsyncSimpleMMWorkflow,
    SimpleMMWorkflow,
    SimpleWorkflow,
)
from reinforge.workflows import WORKFLOWS
from reinforge.workflows.multimodal import mm_user_message


def test_registered_under_trinitys_names() -> None:
    assert WORKFLOWS.get("simple_mm_workflow") is SimpleMMWorkflow
    assert WORKFLOWS.get("async_simple_mm_workflow") is AsyncSimpleMMWorkflow
    assert AsyncSimpleMMWorkflow.is_async and not SimpleMMWorkflow.is_async
    # Trinity's bases, so subclasses and isinstance checks carry over
    assert issubclass(SimpleMMWorkflow, SimpleWorkflow)
    assert issubclass(AsyncSimpleMMWorkflow, SimpleMMWorkflow)


def test_tags_become_parts_in_order_and_untagged_media_go_first() -> None:
    msg = mm_user_message("Left <image> right <image>?", ["a.png", "b.png", "c.png"], ["v.mp4"])
    assert msg["content"] == [
        {"type": "image", "image": "c.png"},
        {"type": "video", "video": "v.mp4"},
        {"type": "text", "text": "Left "},
        {"type": "image", "image": "a.png"},
        {"type": "text", "text": " right "},
        {"type": "image", "image": "b.png"},
        {"type": "text", "text": "?"},
    ]


def test_more_tags_than_images_is_an_error() -> None:
    with pytest.raises(MediaInputError, match="more <image> tags"):
        mm_user_message("<image><image>", ["a.png"], [])


def _task(**raw: object) -> Task:
    return Task(
        workflow="simple_mm_workflow",
        reward_fn="accuracy_reward",
        repeat_times=2,
        format_args=FormatConfig(
            prompt_key="q", response_key="a", image_key="pics", system_prompt="Look."
        ),
        raw_task={"q": "<image>How many?", "a": "2", **raw},
    )


def test_messages_from_the_format_keys_and_image_dir() -> None:
    task = _task(pics=["x.png", "data:image/png;base64,AAAA", "/abs/y.png"])
    task.workflow_args = {"image_dir": "/data/imgs"}
    workflow = SimpleMMWorkflow(task=task, model=None)
    messages = workflow.format_messages()
    assert messages[0] == {"role": "system", "content": "Look."}
    assert messages[1]["content"] == [
        {"type": "image", "image": "data:image/png;base64,AAAA"},
        {"type": "image", "image": "/abs/y.png"},
        {"type": "image", "image": "/data/imgs/x.png"},
        {"type": "text", "text": "How many?"},
    ]


def test_a_reward_function_is_required() -> None:
    task = _task(pics="x.png")
    task.reward_fn = None
    with pytest.raises(ValueError, match="needs a reward function"):
        SimpleMMWorkflow(task=task, model=None)
