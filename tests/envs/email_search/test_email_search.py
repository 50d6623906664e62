"""email_search_workflow: a scripted agent through the real tools, judge and explorer."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.config import config_from_dict
from reinforge.envs.email_search import Mailbox
from reinforge.envs.email_search.workflow import art_e_reward
from reinforge.explorer import Explorer
from reinforge.models.auxiliary import AuxiliaryModelConfig, AuxiliaryModels
from reinforge.models.engines.mock import MockEngine

DATA = Path(__file__).resolve().parents[3] / "examples" / "email_search" / "data"
QUERIES = [json.loads(line) for line in (DATA / "test.jsonl").open()][:4]
BY_QUESTION = {q["question"]: q for q in QUERIES}


def call(name: str, **arguments) -> str:
    return f"<tool_call>[{json.dumps({'name': name, 'arguments': arguments})}]</tool_call>"


def agent(answer_for):
    """A scripted agent: search by the source email's subject, read it, answer."""
    mailbox = Mailbox.default()

    def reply(prompt: str, index: int) -> str:
        question = next(q for q in BY_QUESTION if q in prompt)
        query = BY_QUESTION[question]
        target = query["message_ids"][0]
        if '\\"subject\\"' in prompt or '"subject"' in prompt.split(question, 1)[1]:
            answer = answer_for(query)
            sources = [] if answer == "I don't know" else [target]
            return call("return_final_answer", answer=answer, sources=sources)
        if "snippet" in prompt.split(question, 1)[1]:
            return call("read_email", message_id=target)
        subject = mailbox.read_email(target)["subject"]
        words = [w for w in re.findall(r"[A-Za-z0-9]+", subject) if len(w) > 3][:2]
        return call("search_emails", keywords=words)

    return reply


def explore(tmp_path, answer_for, judges=(), workflow_args=None):
    tmp_path.mkdir(parents=True, exist_ok=True)
    rows = tmp_path / "tasks.jsonl"
    rows.write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    cfg = config_from_dict(
        {
            "run_dir": str(tmp_path / "run"),
            "model": {"engine": "mock", "max_response_tokens": 400},
            "buffer": {
                "batch_size": 4,
                "explorer_input": {
                    "taskset": {
                        "path": str(rows),
                        "format": {"prompt_key": "question", "response_key": "answer"},
                        "repeat_times": 2,
                        "default_workflow_type": "email_search_workflow",
                        "workflow_args": workflow_args or {},
                    }
                },
            },
            "explorer": {
                "runner_concurrency": 4,
                "max_retry_times": 0,
                "rollout_model": {"enable_history": True},
            },
        }
    )
    auxiliary = AuxiliaryModels.from_configs([AuxiliaryModelConfig(**j) for j in judges])
    explorer = Explorer(
        MockEngine(replies=agent(answer_for), max_model_len=65536),
        buffer=cfg.buffer,
        explorer=cfg.explorer,
        storage=SQLiteExperienceStorage(cfg.storage_path),
        auxiliary=auxiliary,
    )

    async def go():
        return await explorer.explore_step(explorer.open_taskset())

    try:
        return asyncio.run(go())
    finally:
        explorer.close()


def judge(reply: str) -> dict:
    return {"name": "judge", "engine": "mock", "mock": {"replies": [reply]}}


def test_right_answer_found_read_and_cited_earns_the_top_reward(tmp_path):
    out = explore(tmp_path, lambda q: q["answer"], [judge('{"accept": true}')])
    assert out.metrics["explore/failed_tasks"] == 0
    runs = {}
    for exp in out.experiences:
        runs.setdefault(exp.eid.rid, []).append(exp)
    assert len(runs) == 8 and all(len(turns) == 3 for turns in runs.values())
    for turns in runs.values():
        m = turns[0].metrics
        assert m["read_right_email"] == m["cited_right_email"] == m["answer_correct"] == 1.0
        expected = 1.0 + 0.3 + 0.1 + 0.1 * (1 - 3 / 10)
        assert all(t.reward == pytest.approx(expected) for t in turns)
    # every turn holds what the model sampled: the calls, in order
    first = sorted(next(iter(runs.values())), key=lambda e: e.eid.step)
    assert ["search_emails" in first[0].response_text, "read_email" in first[1].response_text]
    assert out.metrics["explore/workflow/judge_success/mean"] == 1.0


def test_wrong_answer_scores_below_i_dont_know(tmp_path):
    wrong = explore(tmp_path / "a", lambda q: "Tuesday", [judge('{"accept": false}')])
    unknown = explore(tmp_path / "b", lambda q: "I don't know", [judge('{"accept": false}')])
    assert max(e.reward for e in wrong.experiences) < min(e.reward for e in unknown.experiences)
    assert all(-1 < e.reward < 0 for e in wrong.experiences)  # partial credit for reading
    assert all(e.metrics["said_dont_know"] == 1.0 for e in unknown.experiences)


def test_judge_that_talks_nonsense_masks_the_run(tmp_path):
    out = explore(tmp_path, lambda q: q["answer"], [judge("maybe?")])
    assert out.experiences == []
    assert out.metrics["explore/masked/judge_unparseable"] == 24


def test_without_a_judge_the_reference_must_appear_in_the_answer(tmp_path):
    out = explore(tmp_path, lambda q: f"It is {q['answer']}.")
    assert out.metrics["explore/failed_tasks"] == 0
    assert len(out.experiences) == 24  # 4 tasks x 2 runs x 3 turns (search, read, answer)
    assert all(e.metrics["answer_correct"] == 1.0 for e in out.experiences)


def test_without_a_judge_an_answer_lacking_the_reference_is_wrong(tmp_path):
    """Half the tasks answered right, half with an answer that lacks the reference:
    each is scored by what it said, a wrong one below "I don't know"."""
    right = {q["question"] for q in QUERIES[::2]}

    def answer_for(query):
        return f"It is {query['answer']}." if query["question"] in right else "Nobody said."

    out = explore(tmp_path, answer_for)
    assert out.metrics["explore/failed_tasks"] == 0 and len(out.experiences) == 24
    unknown = art_e_reward(
        correct=False, attempted=False, found=True, read=True, cited=True,
        num_sources=1, turns=3, max_turns=10,
    )  # fmt: skip
    answers = [json.loads(exp.info["final_answer"])["answer"] for exp in out.experiences]
    for exp, answer in zip(out.experiences, answers, strict=True):
        if answer == "Nobody said.":
            assert exp.metrics["answer_correct"] == 0.0 and exp.reward < unknown
            assert exp.metrics["said_dont_know"] == 0.0
        else:
            assert exp.metrics["answer_correct"] == 1.0 and exp.reward > 1.0
    assert answers.count("Nobody said.") == 12  # 2 tasks x 2 runs x 3 turns


def test_asking_for_a_judge_the_config_lacks_fails_the_task(tmp_path):
    out = explore(tmp_path, lambda q: q["answer"], workflow_args={"judge": "grader"})
    assert out.metrics["explore/failed_tasks"] == 8  # 4 tasks x 2 runs, one request each
    assert "'grader'" in out.results[0].error


@pytest.mark.parametrize("partial", [(False, False, False), (True, True, True)])
def test_art_e_schedule_orders_outcomes(partial):
    found, read, cited = partial
    base = {"found": found, "read": read, "cited": cited, "num_sources": 1, "max_turns": 10}
    right = art_e_reward(correct=True, attempted=True, turns=5, **base)
    unknown = art_e_reward(correct=False, attempted=False, turns=5, **base)
    wrong = art_e_reward(correct=False, attempted=True, turns=5, **base)
    assert wrong < unknown < right
