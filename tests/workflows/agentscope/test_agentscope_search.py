"""``agentscope_v1_react_search_workflow``: search a local corpus, answer, be judged.

The policy searches for the capital of the question's country, then answers with the
first document's city; for Kenya it searches for something no document holds and
guesses. The judge (an auxiliary mock model) says YES when the response and the
correct answer are the same word.
"""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[3] / "examples" / "agentscope" / "data" / "search.jsonl"
ROWS = [json.loads(line) for line in DATA.read_text().splitlines()]

POLICY = {
    r"<\|im_start\|>tool\n\[\w+\] (\w+) is the capital": (
        '<tool_call>{"name": "GenerateStructuredOutput", "arguments": {"result": "\\1"}}'
        "</tool_call>"
    ),
    r"<\|im_start\|>tool\nNo document": (
        '<tool_call>{"name": "GenerateStructuredOutput", "arguments": {"result": "Mombasa"}}'
        "</tool_call>"
    ),
    r"capital of Kenya\?": (
        '<tool_call>{"name": "search", "arguments": {"query": "weather"}}</tool_call>'
    ),
    r"capital of (\w+)\?": (
        '<tool_call>{"name": "search", "arguments": {"query": "capital of \\1"}}</tool_call>'
    ),
}
JUDGE = {
    r"\[response\]: (\w+)\s+\[correct_answer\]: \1\b": "They match. Correctness: YES",
    r".": "They differ. Correctness: NO",
}


def judge_model(name: str = "judge") -> list[dict]:
    return [{"name": name, "engine": "mock", "mock": {"replies": JUDGE}}]


def test_search_answer_and_judge(explore) -> None:
    out = explore(
        "agentscope_v1_react_search_workflow",
        POLICY,
        rows=ROWS,
        workflow_args={"max_turns": 3, "top_k": 2, "judge_model": "judge"},
        auxiliary_models=judge_model(),
    )
    assert out.exit_code == 0, out.output
    assert all(r.status == "ok" for r in out.records), [r.error for r in out.records]
    groups = out.by_question()
    assert len(groups) == len(ROWS)
    for question, exps in groups.items():
        assert len(exps) == 2 * 2  # 2 rollouts x (search, answer)
        right = "Kenya" not in question
        assert {e.reward for e in exps} == {float(right)}, question
        assert all(e.metrics["searches"] == 1.0 for e in exps)
    answer = next(e for e in groups["What is the capital of Peru?"] if e.eid.step == 1)
    tool_output = answer.prompt_text.split("<|im_start|>tool\n")[1]
    assert tool_output.startswith("[Peru] Lima is the capital of Peru.")
    assert tool_output.count("is the capital") == 2  # top_k documents


def test_no_judge_or_no_corpus_fails_the_task_naming_what_is_missing(explore) -> None:
    out = explore("agentscope_v1_react_search_workflow", POLICY, rows=ROWS[:1])
    assert out.records and all(r.status == "failed" for r in out.records)
    assert "needs an auxiliary model" in out.records[0].error
    rows = [{"question": "What is the capital of Peru?", "answer": "Lima"}]
    out = explore(
        "agentscope_v1_react_search_workflow", POLICY, rows=rows, auxiliary_models=judge_model()
    )
    assert out.records and all(r.status == "failed" for r in out.records)
    assert "needs a corpus" in out.records[0].error


def test_a_corpus_file(explore, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "\n".join(json.dumps(d) for d in ROWS[0]["documents"]) + "\n", encoding="utf-8"
    )
    rows = [{"question": r["question"], "answer": r["answer"]} for r in ROWS[:2]]
    out = explore(
        "agentscope_v1_react_search_workflow",
        POLICY,
        rows=rows,
        workflow_args={"corpus": str(corpus)},
        auxiliary_models=judge_model(),
        repeat_times=1,
    )
    assert out.exit_code == 0, out.output
    assert {e.reward for e in out.experiences} == {1.0}
    bad = explore(
        "agentscope_v1_react_search_workflow",
        POLICY,
        rows=rows,
        workflow_args={"corpus": str(tmp_path / "missing.jsonl")},
        auxiliary_models=judge_model(),
    )
    assert bad.records and "missing.jsonl" in bad.records[0].error
