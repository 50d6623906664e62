"""The AgentScope workflow-function adapters (V0 and V1) on the scripted mock engine.

The agent is the example's ``agentscope_math_agent.py`` (AgentScope's ReAct agent with
a calculator tool and a structured answer). The mock policy calls the calculator
with the question's expression, then answers with the tool's result, except for
``9 - 4``, where it answers 7 at once: three questions right in two model calls,
one wrong in one.
"""

from __future__ import annotations

from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "agentscope"
PLUGIN = str(EXAMPLE / "agentscope_math_agent.py")

REPLIES = {
    # after the tool ran: the structured answer, with the tool's output
    r"<\|im_start\|>tool\n(-?\d+)": (
        '<tool_call>{"name": "GenerateStructuredOutput", "arguments": {"answer": "\\1"}}'
        "</tool_call>"
    ),
    r"What is 9 - 4\?": (
        '<tool_call>{"name": "GenerateStructuredOutput", "arguments": {"answer": "7"}}</tool_call>'
    ),
    r"What is (\d+) ([-+*]) (\d+)\?": (
        'Let me compute. <tool_call>{"name": "calculate", "arguments": '
        '{"expression": "\\1 \\2 \\3"}}</tool_call>'
    ),
}


def test_the_adapter_turns_every_model_call_into_an_experience(explore) -> None:
    args = {"workflow_func": "agentscope_math_agent.solve"}
    out = explore("agentscope_workflow_adapter", REPLIES, workflow_args=args, plugins=[PLUGIN])
    assert out.exit_code == 0, out.output
    assert all(r.status == "ok" for r in out.records), [r.error for r in out.records]
    groups = out.by_question()
    assert {q: len(e) for q, e in groups.items()} == {
        "What is 2 + 3?": 4,  # 2 rollouts x (tool call, answer)
        "What is 7 * 6?": 4,
        "What is 9 - 4?": 2,  # 2 rollouts x (answer)
        "What is 1 + 1?": 4,
    }
    for question, exps in groups.items():
        assert {e.reward for e in exps} == ({0.0} if "9 - 4" in question else {1.0})
    run = [e for e in groups["What is 7 * 6?"] if e.eid.run == 0]
    call, answer = sorted(run, key=lambda e: e.eid.step)
    # the tool call was parsed and run: its result is in the next call's prompt
    assert '"name": "calculate"' in call.response_text
    assert "<|im_start|>tool\n42" in answer.prompt_text
    assert '"answer": "42"' in answer.response_text
    assert (call.eid.step, answer.eid.step) == (0, 1)
    assert "calculate" in call.prompt_text  # the tool kit was in the prompt


def test_v1_uses_the_judge_and_puts_metrics_on_the_last_experience(explore) -> None:
    args = {
        "workflow_func": "agentscope_math_agent:solve_v1",
        "judge_func": "agentscope_math_agent.judge",
    }
    out = explore("agentscope_workflow_adapter_v1", REPLIES, workflow_args=args, plugins=[PLUGIN])
    assert out.exit_code == 0, out.output
    assert all(r.status == "ok" for r in out.records), [r.error for r in out.records]
    groups = out.by_question()
    for question, exps in groups.items():
        right = "9 - 4" not in question
        assert {e.reward for e in exps} == {float(right)}
        for exp in exps:
            last = exp.eid.step == (1 if right else 0)
            assert ("judged_right" in exp.metrics) == last, (question, exp.eid, exp.metrics)
            if last:
                assert exp.metrics["judged_right"] == float(right)
                said = "7" if not right else {"What is 7 * 6?": "42"}.get(question, "x")
                assert exp.metrics["answer_chars"] == len(said)  # the agent's answer


FAILING = """
from reinforge.workflows.agentscope import WorkflowOutput


async def explodes(raw_task, chat_model):
    raise ValueError("the agent exploded on purpose")


async def no_reward(task, model):
    return WorkflowOutput(response="x")


async def not_a_number(raw_task, chat_model):
    return "high"
"""


def test_an_agent_that_raises_fails_its_task_and_the_run_goes_on(explore, tmp_path: Path) -> None:
    (tmp_path / "failing_agents.py").write_text(FAILING)
    plugin = str(tmp_path / "failing_agents.py")
    cases = {
        ("agentscope_workflow_adapter", "failing_agents.explodes"): "exploded on purpose",
        ("agentscope_workflow_adapter_v1", "failing_agents.no_reward"): "has no reward",
        ("agentscope_workflow_adapter", "failing_agents.not_a_number"): "must give a number",
        ("agentscope_workflow_adapter", "failing_agents.missing"): "names nothing importable",
        ("agentscope_workflow_adapter", None): "workflow_args.workflow_func must be a function",
    }
    for (workflow, func), reason in cases.items():
        out = explore(workflow, REPLIES, workflow_args={"workflow_func": func}, plugins=[plugin])
        assert out.exit_code == 0, out.output
        assert out.experiences == []
        assert out.records and all(r.status == "failed" for r in out.records)
        assert all(reason in r.error for r in out.records), (reason, out.records[0].error)


MODEL_JUDGE = """
from agentscope.message import UserMsg

from reinforge.workflows.agentscope import JudgeOutput


async def judged_by_model(task, response, auxiliary_models):
    judge = auxiliary_models["judge"]
    verdict = await judge([UserMsg(name="user", content=f"Is {response} equal to {task['answer']}?")])
    text = "".join(getattr(block, "text", "") for block in verdict.content)
    return JudgeOutput(reward=float(text == "YES"), metrics={"judge_calls": 1})
"""


def test_v1_hands_the_judge_the_auxiliary_models_as_agentscope_models(
    explore, tmp_path: Path
) -> None:
    (tmp_path / "model_judge.py").write_text(MODEL_JUDGE)
    args = {
        "workflow_func": "agentscope_math_agent.solve_v1",
        "judge_func": "model_judge.judged_by_model",
    }
    judge = {"replies": {r"Is (-?\d+) equal to \1\?": "YES", ".": "NO"}}
    out = explore(
        "agentscope_workflow_adapter_v1",
        REPLIES,
        workflow_args=args,
        plugins=[PLUGIN, str(tmp_path / "model_judge.py")],
        auxiliary_models=[{"name": "judge", "engine": "mock", "mock": judge}],
    )
    assert out.exit_code == 0, out.output
    assert all(r.status == "ok" for r in out.records), [r.error for r in out.records]
    for question, exps in out.by_question().items():
        assert {e.reward for e in exps} == {0.0 if "9 - 4" in question else 1.0}
        # the judge's calls are not the policy's: no experience holds them
        assert all("equal to" not in e.prompt_text for e in exps)


def test_the_taskset_rollout_args_reach_the_policy(explore) -> None:
    """``rollout_args.max_tokens`` travels as AgentScope's max_tokens parameter: every
    reply is cut there."""
    args = {"workflow_func": "agentscope_math_agent.solve"}
    out = explore(
        "agentscope_workflow_adapter",
        REPLIES,
        workflow_args=args,
        plugins=[PLUGIN],
        rollout_args={"max_tokens": 12},
        repeat_times=1,
    )
    assert out.exit_code == 0, out.output
    assert out.experiences and all(e.response_length <= 12 for e in out.experiences)
    assert {e.truncate_status for e in out.experiences} == {"response_truncated"}
