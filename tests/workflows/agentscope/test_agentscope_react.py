"""The AgentScope ReAct math workflows on the scripted mock engine.

The policy runs the question's expression through ``execute_python_code`` and then
gives the tool's output as the boxed structured ``result``; for ``9 - 4`` it answers
``\\boxed{7}`` at once (wrong). The V0 workflow takes the agent's final text, so the
mock's arithmetic policy (a plain ``\\boxed{}`` answer) drives it.
"""

from __future__ import annotations

import re

import pytest

# the reply templates are expanded by re's match.expand, then parsed as JSON:
# four backslashes become the JSON escape of one
PYTHON_REPLIES = {
    r"<\|im_start\|>tool\n(-?\d+)": (
        '<tool_call>{"name": "GenerateStructuredOutput", '
        r'"arguments": {"result": "The answer is \\\\boxed{\1}"}}</tool_call>'
    ),
    r"What is 9 - 4\?": (
        '<tool_call>{"name": "GenerateStructuredOutput", '
        r'"arguments": {"result": "\\\\boxed{7}"}}</tool_call>'
    ),
    r"What is (\d+) ([-+*]) (\d+)\?": (
        '<tool_call>{"name": "execute_python_code", "arguments": '
        '{"code": "print(\\1 \\2 \\3)"}}</tool_call>'
    ),
}


@pytest.mark.parametrize(
    "workflow", ["agentscope_react_math_workflow", "agentscope_react_workflow", "as_react_workflow"]
)
def test_the_python_tool_runs_and_the_boxed_answer_is_scored(explore, workflow: str) -> None:
    out = explore(workflow, PYTHON_REPLIES, workflow_args={"max_iters": 3})
    assert out.exit_code == 0, out.output
    assert all(r.status == "ok" for r in out.records), [r.error for r in out.records]
    groups = out.by_question()
    assert {q: len(e) for q, e in groups.items()} == {
        "What is 2 + 3?": 4,  # 2 rollouts x (python call, answer)
        "What is 7 * 6?": 4,
        "What is 9 - 4?": 2,
        "What is 1 + 1?": 4,
    }
    for question, exps in groups.items():
        right = "9 - 4" not in question
        assert {e.reward for e in exps} == {1.0 if right else 0.0}
        assert all(e.metrics["accuracy"] == float(right) for e in exps)
        assert all(e.metrics["react_memory_length"] >= 2 for e in exps)
    run = sorted((e for e in groups["What is 7 * 6?"] if e.eid.run == 1), key=lambda e: e.eid.step)
    call, answer = run
    assert '"name": "execute_python_code"' in call.response_text
    assert "execute_python_code" in call.prompt_text  # the tool kit is in the prompt
    assert "<|im_start|>tool\n42\n" in answer.prompt_text  # a real interpreter printed 42
    assert "\\\\boxed{42}" in answer.response_text


def test_an_unknown_template_type_fails_the_task(explore) -> None:
    out = explore("agentscope_react_workflow", PYTHON_REPLIES, workflow_args={"type": "chess"})
    assert out.exit_code == 0, out.output
    assert out.records and all(r.status == "failed" for r in out.records)
    assert "no template for workflow_args.type 'chess'" in out.records[0].error


def test_v0_runs_synchronously_and_scores_the_final_text(explore) -> None:
    mock = {"policy": "arithmetic", "error_rate": 0.5, "seed": 3}
    out = explore("agentscopev0_react_math_workflow", None, mock=mock, repeat_times=4)
    assert out.exit_code == 0, out.output
    assert all(r.status == "ok" for r in out.records), [r.error for r in out.records]
    assert len(out.experiences) == 4 * 4  # one model call per run: the text answer
    for exp in out.experiences:
        assert exp.response_text.startswith("The answer is \\boxed{")
        assert "GenerateStructuredOutput" not in exp.prompt_text  # no structured answer
        assert "execute_python_code" in exp.prompt_text
    # the mock answers some samples off by one (which ones depends on the prompt's
    # text): each is scored by whether its final text's boxed number is the answer
    for exp in out.experiences:
        a, op, b = re.search(r"What is (\d+) ([-+*]) (\d+)\?", exp.prompt_text).groups()
        truth = {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[op]
        given = int(re.search(r"\\boxed\{(-?\d+)\}", exp.response_text).group(1))
        assert exp.reward == float(given == truth), (exp.response_text, truth)


def test_an_agent_whose_model_call_fails_fails_its_task(explore) -> None:
    """A question longer than the context makes the model call, and so AgentScope's
    agent, raise: that task fails with the reason, the others finish."""
    rows = [
        {"question": "What is 7 * 6?", "answer": "42"},
        {"question": "What is 1 + 1? " + "Think hard. " * 800, "answer": "2"},
    ]
    out = explore("agentscope_react_math_workflow", PYTHON_REPLIES, rows=rows)
    assert out.exit_code == 0, out.output
    failed = [r for r in out.records if r.status == "failed"]
    assert {r.task for r in failed} == {"1"}, out.records
    assert "the AgentScope agent raised" in failed[0].error
    assert "context length" in failed[0].error
    assert set(out.by_question()) == {"What is 7 * 6?"}


def test_an_agent_that_never_answers_ends_after_the_grace_iterations(explore) -> None:
    """Past max_iters AgentScope forces its answer tool; reinforge cannot force a tool,
    so the call goes out with tool_choice auto and the agent gives up after its grace
    iterations: reward 0, and the task succeeds (its calls are still trained on)."""
    rows = [{"question": "What is 3 + 4?", "answer": "7"}]
    out = explore(
        "agentscope_react_math_workflow",
        {".": "Let me think about it."},
        rows=rows,
        repeat_times=1,
        workflow_args={"max_iters": 2},
    )
    assert out.exit_code == 0, out.output
    assert [r.status for r in out.records] == ["ok"]
    assert len(out.experiences) == 2 + 5  # max_iters, then AgentScope's 5 grace iterations
    assert {e.reward for e in out.experiences} == {0.0}
    assert "reached the maximum reasoning-acting iterations" in out.experiences[-1].prompt_text
