"""The viewer on unusual run directories: empty, half-written, hand-made buffers; tokenizers."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from reinforge.buffer.sqlite_storage import SQLiteExperienceStorage, TaskRecord
from reinforge.core import EID, Experience
from reinforge.viewer import create_app
from reinforge.viewer.metrics import charts, read_series
from reinforge.viewer.tokens import ByteDecoder, HFDecoder, RawIds, load_decoder


def test_missing_run_dir_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        create_app(tmp_path / "nope")


def test_empty_run_dir_shows_what_is_missing(tmp_path: Path) -> None:
    with TestClient(create_app(tmp_path)) as client:
        run = client.get("/api/run").json()
        assert run["experiences"] == 0 and "does not exist" in run["buffer_error"]
        steps = client.get("/api/steps").json()
        assert steps["steps"] == [] and "does not exist" in steps["buffer_error"]
        assert client.get("/api/metrics").json() == {"charts": [], "series": {}}
        assert client.get("/api/step/1").status_code == 404
        assert client.get("/api/tasks").json() == {"total": 0, "tasks": []}
        assert client.get("/").status_code == 200
    assert not (tmp_path / "buffer.db").exists()  # the viewer created nothing


def test_a_database_that_is_not_a_buffer(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "buffer.db") as conn:
        conn.execute("CREATE TABLE other (x INTEGER)")
    with TestClient(create_app(tmp_path)) as client:
        assert "not a reinforge buffer" in client.get("/api/run").json()["buffer_error"]


def _exp(task: str, run: int, reward: float | None, **info: object) -> Experience:
    return Experience(
        tokens=[5, 6, 7, 40, 41, 42],
        prompt_length=3,
        logprobs=[-0.1, -0.2, -0.3],
        reward=reward,
        eid=EID(batch=1, task=task, run=run),
        info={"taskset": "hand", **info},
        response_text="abc",
        prompt_text="xyz",
    )


@pytest.fixture
def hand_made_run(tmp_path: Path) -> Path:
    """A buffer written directly: no advantages, no messages, odd task ids and rewards."""
    storage = SQLiteExperienceStorage(tmp_path / "buffer.db")
    storage.write(
        [
            _exp("gsm8k/12", 0, 1.0, termination_reason="env_done"),
            _exp("gsm8k/12", 1, float("nan"), termination_reason="max_turns"),
            _exp("7-ruler", 0, 0.5, mask_reason="judge_error: timeout"),
            _exp("8", 0, None),
        ],
        task_records=[
            TaskRecord("hand", "1", "gsm8k/12", "ok", None, 1, 2, 0.5),
            TaskRecord("hand", "1", "9", "timeout", "task 9 timed out after 30 s", 2, 0, 30.0),
        ],
    )
    storage.close()
    (tmp_path / "config.json").write_text(json.dumps({"project": "p", "model": {"engine": "hf"}}))
    (tmp_path / "metrics.jsonl").write_text(
        '{"step": 1, "explore/reward_mean": 0.5, "train/loss": 1.5}\n{"step": 2, "explore/rew'
    )
    return tmp_path


def test_hand_made_buffer(hand_made_run: Path) -> None:
    with TestClient(create_app(hand_made_run)) as client:
        groups = {g["task"]: g for g in client.get("/api/step/1").json()["groups"]}
        assert list(groups) == ["8", "9", "7-ruler", "gsm8k/12"]
        assert groups["9"]["status"] == "timeout" and groups["9"]["count"] == 0
        assert groups["gsm8k/12"]["reward_mean"] == 1.0  # the NaN reward is left out
        assert [e["reward"] for e in groups["gsm8k/12"]["experiences"]] == [1.0, None]
        assert groups["7-ruler"]["masked"] is True
        assert groups["8"]["reward_mean"] is None
        only_masked = client.get("/api/step/1", params={"masked": "true"}).json()["groups"]
        assert [g["task"] for g in only_masked] == ["7-ruler"]
        ended = client.get("/api/step/1", params={"termination": "max_turns"}).json()["groups"]
        assert [g["task"] for g in ended] == ["gsm8k/12"] and ended[0]["count"] == 1

        exp = client.get(f"/api/experience/{groups['8']['experiences'][0]['id']}").json()
        assert exp["messages"] is None and exp["tokens"]["advantages"] is None
        assert exp["tokens"]["pieces"] == ["⟨40⟩", "⟨41⟩", "⟨42⟩"]  # no model named: raw ids
        assert exp["tokenizer"].startswith("raw ids")

        compare = client.get("/api/compare", params={"task": "gsm8k/12"}).json()
        assert compare["steps"] == ["1"] and compare["a"]["count"] == 2

        curves = client.get("/api/metrics").json()
        assert [c["title"] for c in curves["charts"]] == [
            "Explore reward and accuracy",
            "Training loss",
        ]


def test_a_buffer_written_before_task_scores(hand_made_run: Path) -> None:
    """A buffer whose task_results has no score column (written before it was added)
    is shown as it is, read-only: its records read with no score, nothing is altered."""
    path = hand_made_run / "buffer.db"
    with sqlite3.connect(path) as conn:
        conn.execute("ALTER TABLE task_results DROP COLUMN score")
    with TestClient(create_app(hand_made_run)) as client:
        tasks = client.get("/api/tasks").json()["tasks"]
        assert sorted(t["task"] for t in tasks) == ["9", "gsm8k/12"]
        assert all(t["score"] is None for t in tasks)
        assert client.get("/api/step/1").json()["groups"][1]["status"] == "timeout"
    with sqlite3.connect(path) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(task_results)")}
    assert "score" not in columns


def test_read_series_skips_what_is_not_a_number(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    rows = [
        {"step": 1, "time": 5.0, "a": 1, "flag": True, "name": "x", "bad": float("nan")},
        {"step": 1, "a": 2},  # the later row of a step wins
        {"a": 9},  # no step
        {"step": 0, "eval/t1/accuracy": 0.25, "eval/t2/accuracy": 0.5},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n{torn")
    series = read_series(path)
    assert series == {
        "a": [(1, 2.0)],
        "eval/t1/accuracy": [(0, 0.25)],
        "eval/t2/accuracy": [(0, 0.5)],
    }
    (chart,) = charts(series)
    assert [line["name"] for line in chart["lines"]] == ["eval/t1/accuracy", "eval/t2/accuracy"]
    assert read_series(tmp_path / "missing.jsonl") == {}


def test_decoder_choice(tmp_path: Path, tiny_model_path: Path) -> None:
    assert isinstance(load_decoder({"model": {"engine": "mock"}}), ByteDecoder)
    assert isinstance(load_decoder({}), RawIds)
    missing = {"model": {"engine": "hf", "model_path": str(tmp_path / "none")}}
    assert isinstance(load_decoder(missing), RawIds)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{}")
    broken = {"model": {"engine": "hf", "model_path": str(tmp_path / "broken")}}
    assert isinstance(load_decoder(broken), RawIds)  # no tokenizer files: no exception

    decoder = load_decoder({"model": {"engine": "hf", "model_path": str(tiny_model_path)}})
    assert isinstance(decoder, HFDecoder)
    ids = decoder.tokenizer.encode("The answer is 42", add_special_tokens=False)
    assert "".join(decoder.pieces(ids)) == "The answer is 42"
    # a catalog name resolves to its cached copy only (cache_dir: the tiny model's parent)
    named = {"model_path": tiny_model_path.name, "cache_dir": str(tiny_model_path.parent)}
    assert isinstance(load_decoder({"model": {"engine": "hf", **named}}), HFDecoder)
    # the mock engine with the model's tokenizer uses the model's files too
    mock_model = {
        "engine": "mock",
        "mock": {"tokenizer": "model"},
        "model_path": str(tiny_model_path),
    }
    assert isinstance(load_decoder({"model": mock_model}), HFDecoder)
