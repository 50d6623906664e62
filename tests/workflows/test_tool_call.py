"""tool_call_workflow: OpenAI-SDK agent code, native tool-call format, name + argument reward."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.config import config_from_dict
from reinforge.core import FormatConfig, Task
from reinforge.explorer import Explorer
from reinforge.models.engines.mock import MockEngine
from reinforge.models.model_wrapper import ModelWrapper
from reinforge.workflows.step_wise import HistoryDisabledError
from reinforge.workflows.tool_call import score_tool_call

DATA = Path(__file__).resolve().parents[2] / "examples" / "tool_call" / "data"


def call(name: str, **args) -> list[dict]:
    return [{"function": {"name": name, "arguments": json.dumps(args)}}]


def test_score_tool_call() -> None:
    expected = {"name": "add", "arguments": {"a": 2, "b": 3}}
    assert score_tool_call(call("add", a=2, b=3), expected) == {
        "tool_name": 0.5,
        "tool_arguments": 0.5,
    }
    assert score_tool_call(call("add", b=3, a=2.0), expected)["tool_arguments"] == 0.5
    assert score_tool_call(call("add", a=2, b=4), expected) == {
        "tool_name": 0.5,
        "tool_arguments": 0.0,
    }
    assert score_tool_call(call("add", a=2), expected)["tool_arguments"] == 0.0
    assert sum(score_tool_call(call("mul", a=2, b=3), expected).values()) == 0.0
    assert sum(score_tool_call([], expected).values()) == 0.0
    city = {"name": "get_weather", "arguments": {"city": "Paris"}}
    assert score_tool_call(call("get_weather", city=" paris"), city)["tool_arguments"] == 0.5


def task(row: dict, repeat: int = 4) -> Task:
    return Task(
        workflow="tool_call_workflow",
        raw_task=row,
        repeat_times=repeat,
        format_args=FormatConfig(prompt_key="question", response_key="answer"),
    )


ROW = {
    "question": "What is 2 plus 3?",
    "tools": [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}],
    "answer": {"name": "add", "arguments": {"a": 2, "b": 3}},
}


def test_rewards_per_reply() -> None:
    replies = [
        '<tool_call>[{"name": "add", "arguments": {"a": 2, "b": 3}}]</tool_call>',
        '<tool_call>[{"name": "add", "arguments": {"a": 2, "b": 30}}]</tool_call>',
        "5",
        '<tool_call>[{"name": "add", "arguments": </tool_call>',
    ]
    model = ModelWrapper(MockEngine(replies=replies), enable_history=True)
    exps = task(ROW).to_workflow(model).run()
    assert [e.reward for e in exps] == [1.0, 0.5, 0.0, 0.0]
    assert [e.metrics["called_a_tool"] for e in exps] == [1.0, 1.0, 0.0, 0.0]
    assert "malformed tool call" in exps[3].info["tool_call_error"]
    assert [e.eid.run for e in exps] == [0, 1, 2, 3]
    # the experiences hold the sampled tokens, and the tools were in the prompt
    assert all('"name": "add"' in e.prompt_text for e in exps)
    assert model.extract_experience_from_history() == []


def test_needs_history_and_complete_rows() -> None:
    with pytest.raises(HistoryDisabledError, match="enable_history"):
        task(ROW).to_workflow(ModelWrapper(MockEngine()))
    with pytest.raises(ValueError, match="lacks \\['tools'\\]"):
        task({"question": "q", "answer": {}}).to_workflow(
            ModelWrapper(MockEngine(), enable_history=True)
        )


def test_shipped_taskset_through_the_explorer(tmp_path: Path) -> None:
    replies = {
        r"What is (\d+) plus (\d+)\?": '<tool_call>[{"name": "add", "arguments": {"a": \\1, "b": \\2}}]</tool_call>',
        r"weather in (\w+)\?": '<tool_call>[{"name": "get_weather", "arguments": {"city": "\\1"}}]</tool_call>',
        r"Set an alarm for": '<tool_call>[{"name": "set_alarm", "arguments": {"time": "noon"}}]</tool_call>',
    }
    cfg = config_from_dict(
        {
            "run_dir": str(tmp_path / "run"),
            "model": {"engine": "mock", "max_response_tokens": 200, "mock": {"replies": replies}},
            "buffer": {
                "batch_size": 40,
                "explorer_input": {
                    "taskset": {
                        "path": str(DATA / "test.jsonl"),
                        "format": {"prompt_key": "question", "response_key": "answer"},
                        "repeat_times": 2,
                        "default_workflow_type": "tool_call_workflow",
                    }
                },
            },
            "explorer": {"runner_concurrency": 4, "rollout_model": {"enable_history": True}},
        }
    )
    explorer = Explorer.from_config(cfg.model, cfg.buffer, cfg.explorer, cfg.storage_path)
    try:
        summary = asyncio.run(explorer.explore())
    finally:
        explorer.close()
    assert summary.status_counts == {"ok": 40}
    storage = SQLiteExperienceStorage(cfg.storage_path)
    exps = storage.read()
    storage.close()
    assert len(exps) == 80
    questions = {json.loads(line)["question"] for line in (DATA / "test.jsonl").open()}
    for exp in exps:
        question = exp.messages[1]["content"]
        assert question in questions
        if "plus" in question or "weather in" in question:
            assert exp.reward == 1.0, question
        elif question.startswith("Set an alarm"):
            assert exp.reward == 0.5  # right tool, wrong time
        else:
            assert exp.reward == 0.0
    assert {e.reward for e in exps} == {0.0, 0.5, 1.0}
