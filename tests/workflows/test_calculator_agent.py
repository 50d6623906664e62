"""calculator_agent_workflow: the calculator tool, the task-success reward, invalid runs recorded."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from reinforge.core import FormatConfig, Task
from reinforge.models.engines.mock import MockEngine
from reinforge.models.model_wrapper import ModelWrapper
from reinforge.models.tokenizer import HFChatTokenizer
from reinforge.models.tool_format import render_messages, render_tool_calls
from reinforge.workflows.calculator import call_calculator, evaluate_expression
from reinforge.workflows.calculator_agent import demonstration, final_number
from reinforge.workflows.step_wise import HistoryDisabledError

ROW = {"question": "What is 48213 * 737?", "answer": str(48213 * 737)}
CALL = '<tool_call>[{"name": "calculator", "arguments": {"expression": "EXPR"}}]</tool_call>'
_TOOL_RESULT = re.compile(r"<\|im_start\|>tool\n([^<]*)<\|im_end\|>\n<\|im_start\|>assistant\n$")
_QUESTION = re.compile(r"What is (.+?)\?<\|im_end\|>")


def agent(first: str = CALL, then: str = "RESULT") -> Callable[[str, int], str]:
    """A scripted policy: ``first`` for the question (EXPR = its expression), ``then``
    after a tool result (RESULT = the result)."""

    def reply(prompt: str, index: int) -> str:
        result = _TOOL_RESULT.search(prompt)
        if result:
            return then.replace("RESULT", result.group(1))
        return first.replace("EXPR", _QUESTION.search(prompt).group(1))

    return reply


def run(replies: Callable[[str, int], str], row: dict = ROW, **workflow_args) -> list:
    model = ModelWrapper(MockEngine(replies=replies), enable_history=True)
    task = Task(
        workflow="calculator_agent_workflow",
        raw_task=row,
        workflow_args=workflow_args,
        format_args=FormatConfig(prompt_key="question", response_key="answer"),
    )
    exps = asyncio.run(task.to_workflow(model).run_async())
    assert model.extract_experience_from_history() == []
    return exps


def test_calculator_valid_calls() -> None:
    assert evaluate_expression("48213 * 737") == 48213 * 737
    assert evaluate_expression("1,234 + (5 - 7) * -3") == 1240
    assert call_calculator("calculator", '{"expression": "12 * 3"}').result == "36"
    assert call_calculator("calculator", {"expression": 7}).result == "7"


@pytest.mark.parametrize(
    ("name", "arguments", "error"),
    [
        ("calc", '{"expression": "1 + 1"}', "unknown tool 'calc'"),
        ("calculator", '{"expression": ', "not JSON"),
        ("calculator", "[1, 2]", "JSON object"),
        ("calculator", '{"expr": "1 + 1"}', "needs a string 'expression'"),
        ("calculator", '{"expression": true}', "needs a string 'expression'"),
        ("calculator", '{"expression": "2 ** 100000"}', "only integers"),
        ("calculator", '{"expression": "8 / 2"}', "only integers"),
        ("calculator", '{"expression": "__import__(\'os\')"}', "only integers"),
        ("calculator", '{"expression": "1.5 * 2"}', "only integers"),
        ("calculator", '{"expression": "12 *"}', "not an arithmetic expression"),
        ("calculator", '{"expression": "  "}', "empty expression"),
        ("calculator", json.dumps({"expression": "1+" * 150 + "1"}), "longer than"),
    ],
)
def test_calculator_invalid_calls(name: str, arguments: str, error: str) -> None:
    outcome = call_calculator(name, arguments)
    assert not outcome.ok and outcome.result is None
    assert error in outcome.error


def test_final_number() -> None:
    assert final_number("The answer is 35,532,981.") == "35532981"
    assert final_number("-12 then 40") == "40"
    assert final_number("no idea") is None


def test_a_correct_agent_is_one_token_exact_conversation() -> None:
    (exp,) = run(agent())
    assert exp.reward == 1.0
    assert exp.metrics["used_tool"] == 1.0 and exp.metrics["tool_calls"] == 1.0
    assert exp.metrics["agent_turns"] == 2.0
    assert exp.metrics["tool_call_invalid"] == 0.0 and exp.metrics["no_answer"] == 0.0
    assert exp.info["final_answer"] == ROW["answer"]
    assert "invalid_reason" not in exp.info
    # both replies are trained on; the tool result between them is masked out
    response = exp.tokens[exp.prompt_length :].tolist()
    mask = exp.action_mask.tolist()
    tokenizer = MockEngine().tokenizer
    trained = tokenizer.decode([t for t, m in zip(response, mask, strict=True) if m])
    masked = tokenizer.decode([t for t, m in zip(response, mask, strict=True) if not m])
    assert "48213 * 737" in trained and trained.endswith(ROW["answer"])
    assert ROW["answer"] in masked and "tool" in masked
    assert '"name": "calculator"' in exp.prompt_text  # the tool schema was offered


@pytest.mark.parametrize(
    ("replies", "invalid", "no_answer", "reason"),
    [
        (
            agent(first='<tool_call>[{"name": "calculator", "arguments": </tool_call>'),
            1,
            0,
            "malformed",
        ),
        (agent(first=CALL.replace("calculator", "add")), 1, 0, "unknown tool 'add'"),
        (agent(first=CALL.replace("expression", "x")), 1, 0, "bad arguments"),
        (agent(first=CALL.replace("EXPR", "EXPR / 2")), 1, 0, "bad expression"),
        (agent(then="I cannot say."), 0, 1, "no number"),
        (agent(then=CALL.replace("EXPR", "RESULT + 0")), 0, 1, "after 3 turns"),
    ],
)
def test_invalid_runs_score_zero_and_say_why(replies, invalid, no_answer, reason) -> None:
    exps = run(replies)
    assert len(exps) == 1
    (exp,) = exps
    assert exp.reward == 0.0
    assert exp.metrics["tool_call_invalid"] == invalid
    assert exp.metrics["no_answer"] == no_answer
    assert reason in exp.info["invalid_reason"]


def test_valid_but_wrong_and_tool_free_answers() -> None:
    (wrong,) = run(agent(then="The result is 5."))
    assert wrong.reward == 0.0 and wrong.info["final_answer"] == "5"
    assert wrong.metrics["tool_call_invalid"] == 0.0 and "invalid_reason" not in wrong.info
    # an answer from its head counts when it is right: the reward is task success
    (head,) = run(agent(first=ROW["answer"]))
    assert head.reward == 1.0 and head.metrics["used_tool"] == 0.0
    assert head.metrics["agent_turns"] == 1.0
    (one_turn,) = run(agent(), max_turns=1)
    assert one_turn.reward == 0.0 and "after 1 turns" in one_turn.info["invalid_reason"]


def test_needs_history_and_complete_rows() -> None:
    task = Task(workflow="calculator_agent_workflow", raw_task=ROW)
    with pytest.raises(HistoryDisabledError, match="enable_history"):
        task.to_workflow(ModelWrapper(MockEngine()))
    bad = Task(workflow="calculator_agent_workflow", raw_task={"question": "q"})
    with pytest.raises(ValueError, match=r"lacks \['answer'\]"):
        bad.to_workflow(ModelWrapper(MockEngine(), enable_history=True))


def test_demonstration_is_the_conversation_the_workflow_has(tiny_model_path: Path) -> None:
    """With SmolLM2's tokenizer, a policy replying as the demonstration does produces
    exactly the tokens of the demonstration rendered by the chat template with tools."""
    from transformers import AutoTokenizer

    tokenizer = HFChatTokenizer(AutoTokenizer.from_pretrained(str(tiny_model_path)))
    demo = demonstration(ROW["question"], "48213 * 737")
    call_text = render_tool_calls(demo["messages"][2]["tool_calls"])
    engine = MockEngine(replies=agent(first=call_text), tokenizer=tokenizer)
    model = ModelWrapper(engine, enable_history=True)
    task = Task(
        workflow="calculator_agent_workflow",
        raw_task=ROW,
        format_args=FormatConfig(prompt_key="question", response_key="answer"),
    )
    (exp,) = asyncio.run(task.to_workflow(model).run_async())
    assert exp.reward == 1.0
    rendered = render_messages(
        tokenizer, demo["messages"], demo["tools"], add_generation_prompt=False
    )
    conversation = tokenizer.decode(exp.tokens.tolist(), skip_special_tokens=False)
    assert rendered == conversation + "\n"  # the template closes the last turn with a newline
    assert exp.prompt_text == render_messages(tokenizer, demo["messages"][:2], demo["tools"])
