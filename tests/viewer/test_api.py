"""The viewer's JSON API over a real (mock-engine) run, through FastAPI's TestClient."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reinforge.models.tokenizer import ByteTokenizer
from reinforge.viewer import create_app


@pytest.fixture(scope="module")
def client(sample_run: Any) -> Iterator[TestClient]:
    with TestClient(create_app(sample_run.run_dir)) as test_client:
        yield test_client


def get(client: TestClient, path: str, **params: Any) -> Any:
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def test_run_summary(client: TestClient, sample_run: Any) -> None:
    run = get(client, "/api/run")
    assert (run["project"], run["name"], run["engine"]) == ("viewer", "calc-agent", "mock")
    # steps 1 and 3: 4 tasks x 3; steps 2 and 4: 2 tasks x 3 (one failed, one masked)
    assert run["experiences"] == 36
    assert run["read_only"] is True and run["buffer_error"] is None


def test_steps_and_eval_passes(client: TestClient) -> None:
    data = get(client, "/api/steps")
    assert [s["step"] for s in data["steps"]] == [1, 2, 3, 4]
    step1, step2 = data["steps"][:2]
    assert (step1["experiences"], step1["tasks"], step1["records"]) == (12, 4, {"ok": 4})
    assert step2["records"] == {"ok": 2, "failed": 1, "masked": 1}
    assert step2["tasks"] == 4 and step2["tasksets"] == ["calc"]
    assert [e["batch"] for e in data["eval"]] == ["eval0", "eval2", "eval4"]
    assert all(e["experiences"] == 0 and e["tasksets"] == ["calc-eval"] for e in data["eval"])


def test_step_groups(client: TestClient, sample_run: Any) -> None:
    data = get(client, "/api/step/1")
    groups = data["groups"]
    assert [g["task"] for g in groups] == ["0", "1", "2", "3"]
    assert data["total_groups"] == sample_run.groups_per_step
    for group in groups:
        assert group["status"] == "ok" and group["taskset"] == "calc"
        assert group["count"] == group["total"] == sample_run.repeat_times
        assert sorted(e["run"] for e in group["experiences"]) == [0, 1, 2]
        rewards = [e["reward"] for e in group["experiences"]]
        assert group["reward_mean"] == pytest.approx(sum(rewards) / len(rewards), abs=1e-4)
        # group_advantage ran: each experience has a mean advantage, zero-sum per group
        assert sum(e["advantage"] for e in group["experiences"]) == pytest.approx(0, abs=1e-3)
        assert all(e["turns"] == 2 for e in group["experiences"])
        assert all(e["model_version"] == 0 for e in group["experiences"])  # explore only
    assert data["choices"]["tasksets"] == ["calc"]
    assert set(data["choices"]["terminations"]) <= {"answered", "wrong_answer"}


def test_failed_and_masked_groups(client: TestClient, sample_run: Any) -> None:
    groups = {g["task"]: g for g in get(client, "/api/step/2")["groups"]}
    failed = groups[sample_run.failing_task]
    assert failed["status"] == "failed" and failed["count"] == 0
    assert "exploded on purpose" in failed["errors"][0]
    assert "Traceback" in failed["records"][0]["error"] or "File " in failed["records"][0]["error"]
    masked = groups[sample_run.masked_task]
    assert masked["status"] == "masked" and masked["masked"] is True
    assert masked["errors"] == ["judge_error: the judge gave no verdict"]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"status": "failed"}, ["5"]),
        ({"status": "masked"}, ["6"]),
        ({"masked": "true"}, ["6"]),
        ({"masked": "false"}, ["4", "5", "7"]),
        ({"taskset": "calc"}, ["4", "5", "6", "7"]),
        ({"taskset": "nope"}, []),
    ],
)
def test_group_filters(client: TestClient, params: dict[str, str], expected: list[str]) -> None:
    assert [g["task"] for g in get(client, "/api/step/2", **params)["groups"]] == expected


def test_reward_and_termination_filters(client: TestClient) -> None:
    everything = get(client, "/api/step/1")["groups"]
    winners = get(client, "/api/step/1", reward_min=1)["groups"]
    assert winners and all(e["reward"] == 1.0 for g in winners for e in g["experiences"])
    assert {g["task"] for g in winners} == {g["task"] for g in everything if g["reward_max"] == 1.0}
    losers = get(client, "/api/step/1", reward_max=0.5)["groups"]
    assert all(e["reward"] == 0.0 for g in losers for e in g["experiences"])
    wrong = get(client, "/api/step/1", termination="wrong_answer")["groups"]
    assert {e["termination_reason"] for g in wrong for e in g["experiences"]} <= {"wrong_answer"}
    assert sum(g["count"] for g in winners) + sum(g["count"] for g in losers) == 12


def test_unknown_step_and_experience(client: TestClient) -> None:
    assert client.get("/api/step/99").status_code == 404
    assert client.get("/api/experience/999999").status_code == 404
    assert client.get("/api/compare", params={"task": "nope"}).status_code == 404


def _first_experience(client: TestClient) -> dict[str, Any]:
    group = get(client, "/api/step/1")["groups"][0]
    return get(client, f"/api/experience/{group['experiences'][0]['id']}")


def test_experience_multi_turn_with_tool_call(client: TestClient, sample_run: Any) -> None:
    exp = _first_experience(client)
    assert (exp["step"], exp["task"], exp["taskset"]) == ("1", "0", "calc")
    roles = [m["role"] for m in exp["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert exp["messages"][1]["content"] == sample_run.first_prompt
    call = exp["messages"][2]["tool_calls"][0]
    assert call["function"]["name"] == "calculate"
    assert exp["messages"][3]["tool_call_id"] == call["id"] and exp["messages"][3]["content"] == "3"
    assert exp["tools"][0]["function"]["name"] == "calculate"
    assert sample_run.first_prompt in exp["prompt_text"]
    assert exp["info"]["termination_reason"] in ("answered", "wrong_answer")


def test_experience_tokens(client: TestClient) -> None:
    exp = _first_experience(client)
    tokens = exp["tokens"]
    n = len(tokens["ids"])
    assert n > 0 and exp["tokenizer"] == "mock byte tokenizer"
    for key in ("pieces", "action_mask", "logprobs", "advantages"):
        assert len(tokens[key]) == n, key
    # the tool result and template glue between the two replies are masked
    assert 0 in tokens["action_mask"] and tokens["action_mask"][0] == 1
    assert "".join(tokens["pieces"]) == ByteTokenizer().decode(
        tokens["ids"], skip_special_tokens=False
    )
    assert exp["response_text"] in "".join(tokens["pieces"])
    sampled = [lp for lp, m in zip(tokens["logprobs"], tokens["action_mask"], strict=True) if m]
    assert all(lp < 0 for lp in sampled)


def test_tasks_endpoint(client: TestClient, sample_run: Any) -> None:
    failed = get(client, "/api/tasks", status="failed")
    # explore steps 2 and 4, eval passes 0, 2 and 4
    assert failed["total"] == 5
    assert {r["batch"] for r in failed["tasks"]} == {"2", "4", "eval0", "eval2", "eval4"}
    assert all(r["task"] == sample_run.failing_task for r in failed["tasks"])
    assert all("RuntimeError" in r["error"] for r in failed["tasks"])
    assert failed["tasks"][0]["error_line"].startswith("task 5 of taskset")
    both = get(client, "/api/tasks", status="failed,masked", step="2")
    assert sorted(r["status"] for r in both["tasks"]) == ["failed", "masked"]
    # one record per task (the workflow makes all repeats in one call): 4 tasks x 4 steps
    assert get(client, "/api/tasks", taskset="calc")["total"] == 16
    assert len(get(client, "/api/tasks", limit=2)["tasks"]) == 2


def test_compare_first_and_last_step(client: TestClient) -> None:
    data = get(client, "/api/compare", task="0")
    assert data["steps"] == ["1", "3"]
    assert (data["a"]["step"], data["b"]["step"]) == ("1", "3")
    for side in (data["a"], data["b"]):
        assert side["task"] == "0" and side["count"] == 3
        assert {e["uid"].split("/")[0] for e in side["experiences"]} == {side["step"]}
    same = get(client, "/api/compare", task="0", a="3", b="3")
    assert same["a"]["experiences"] == same["b"]["experiences"]
    assert client.get("/api/compare", params={"task": "0", "a": "2"}).status_code == 404


def test_metrics_charts(client: TestClient) -> None:
    data = get(client, "/api/metrics")
    titles = [c["title"] for c in data["charts"]]
    assert titles == ["Explore reward and accuracy", "Eval accuracy per taskset"]
    explore = {line["name"]: line["points"] for line in data["charts"][0]["lines"]}
    assert [step for step, _ in explore["explore/reward_mean"]] == [1, 2, 3, 4]
    evals = data["charts"][1]["lines"]
    assert [line["name"] for line in evals] == ["eval/calc-eval/accuracy"]
    assert [step for step, _ in evals[0]["points"]] == [0, 2, 4]
    assert all(isinstance(step, int) for step, _ in evals[0]["points"])
    assert "explore/step_time" in data["series"]


def test_page_and_static_files(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "/static/viewer.js" in page.text
    # the page loads nothing from other hosts
    assert "http://" not in page.text and "https://" not in page.text
    for name in ("viewer.js", "viewer.css"):
        response = client.get(f"/static/{name}")
        assert response.status_code == 200 and len(response.text) > 500
        assert "https://" not in response.text


def test_viewer_does_not_change_the_buffer(sample_run: Any) -> None:
    path = sample_run.run_dir / "buffer.db"
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with TestClient(create_app(sample_run.run_dir)) as fresh:
        get(fresh, "/api/steps")
        get(fresh, "/api/step/2", status="failed")
        get(fresh, "/api/tasks")
        engine = fresh.app.state.view.storage.engine
        with pytest.raises(Exception, match="readonly"), engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE x (y INTEGER)")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
