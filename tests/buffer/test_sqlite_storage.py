"""SQLiteExperienceStorage keeps experiences bit-exact, records task outcomes, survives reopening."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
import torch

from reinforge.buffer import SQLiteExperienceStorage, TaskRecord
from reinforge.core import Experience
from reinforge.core.eid import EID


def make_experience(i: int, *, multi_turn: bool = False) -> Experience:
    """An experience with every field set, values chosen to catch lossy storage."""
    prompt = [1, 70 + i, 71, 72]
    response = [80 + i, 81, 82, 2]
    mask = [1, 0, 0, 1] if multi_turn else None
    return Experience(
        tokens=prompt + response,
        prompt_length=len(prompt),
        # float32 values that are not round decimals: any float64/text detour shows
        logprobs=torch.tensor([-0.1 * (i + 1), -1e-8, -3.3333333, -17.25], dtype=torch.float32),
        action_mask=mask,
        reward=0.25 * i - 1.0,
        token_level_reward=[0.0, 0.0, 0.5, 1.0 / 3.0],
        eid=EID(batch=3, task=f"task-{i}", run=i, step=1),
        info={"model_version": 7, "taskset": "arith", "nested": {"ids": [1, 2], "ok": True}},
        metrics={"accuracy": 1.0, "format": 0.5},
        messages=[
            {"role": "user", "content": f"What is {i} + 1? ünïcødé ✓"},
            {"role": "assistant", "content": f"\\boxed{{{i + 1}}}"},
        ],
        response_text=f"\\boxed{{{i + 1}}}",
        prompt_text=f"What is {i} + 1?",
        truncate_status="response_truncated" if i % 2 else None,
    )


def assert_same(a: Experience, b: Experience) -> None:
    assert a.tokens.dtype == b.tokens.dtype == torch.long
    assert torch.equal(a.tokens, b.tokens)
    assert a.prompt_length == b.prompt_length
    assert a.logprobs.dtype == b.logprobs.dtype == torch.float32
    assert torch.equal(a.logprobs, b.logprobs)  # bit-exact, not approximately
    assert a.action_mask.dtype == b.action_mask.dtype == torch.bool
    assert torch.equal(a.action_mask, b.action_mask)
    assert torch.equal(a.token_level_reward, b.token_level_reward)
    assert a.advantages is None and b.advantages is None
    assert a.reward == b.reward
    assert a.eid.uid == b.eid.uid
    assert (a.eid.batch, a.eid.task, a.eid.run, a.eid.step) == (
        b.eid.batch,
        b.eid.task,
        b.eid.run,
        b.eid.step,
    )
    assert a.info == b.info
    assert a.metrics == b.metrics
    assert a.messages == b.messages
    assert a.response_text == b.response_text
    assert a.prompt_text == b.prompt_text
    assert a.truncate_status == b.truncate_status


@pytest.fixture
def storage(tmp_path: Path):
    store = SQLiteExperienceStorage(tmp_path / "buffer.db")
    yield store
    store.close()


def test_write_read_round_trip_is_exact(storage: SQLiteExperienceStorage) -> None:
    exps = [make_experience(i, multi_turn=i == 1) for i in range(4)]
    assert storage.write(exps) == 4
    back = storage.read()
    assert len(back) == 4
    for original, stored in zip(exps, back, strict=True):
        assert_same(original, stored)
    assert back[1].experience_type == "multi_turn"
    assert back[0].experience_type == "single_turn"


def test_read_offset_limit_and_count(storage: SQLiteExperienceStorage) -> None:
    assert storage.count() == 0
    assert storage.write([]) == 0
    storage.write([make_experience(i) for i in range(3)])
    storage.write([make_experience(i) for i in range(3, 5)])  # a second transaction appends
    assert storage.count() == 5
    assert [e.eid.task for e in storage.read(1, 2)] == ["task-1", "task-2"]
    assert [e.eid.task for e in storage.iter_experiences(chunk=2)] == [
        f"task-{i}" for i in range(5)
    ]


def test_numpy_and_torch_scalar_rewards_are_stored(storage: SQLiteExperienceStorage) -> None:
    exps = [make_experience(i) for i in range(3)]
    exps[0].reward = np.float32(0.5)
    exps[1].reward = torch.tensor(0.25)
    exps[2].reward = None
    storage.write(exps)
    assert [e.reward for e in storage.read()] == [0.5, 0.25, None]


def test_a_batch_that_cannot_be_serialised_writes_nothing(
    storage: SQLiteExperienceStorage,
) -> None:
    good = make_experience(0)
    bad = make_experience(1)
    bad.info["handle"] = object()  # not JSON serialisable
    with pytest.raises(TypeError, match="not JSON serialisable"):
        storage.write([good, bad])
    assert storage.count() == 0


def test_state_is_saved_with_the_experiences(storage: SQLiteExperienceStorage) -> None:
    assert storage.read_state("explorer") is None
    assert storage.read_state("explorer", default={}) == {}
    cursor = {"epoch": 0, "offset": 8, "step": 1}
    assert storage.write([make_experience(0)], {"explorer": cursor}) == 1
    assert storage.read_state("explorer") == cursor
    # a step that produced no experience still moves the resume point
    assert storage.write([], {"explorer": {**cursor, "offset": 16, "step": 2}}) == 0
    assert storage.read_state("explorer") == {"epoch": 0, "offset": 16, "step": 2}
    assert storage.count() == 1


def test_failed_write_keeps_the_old_state(storage: SQLiteExperienceStorage) -> None:
    storage.write([make_experience(0)], {"explorer": {"step": 1}})
    bad = make_experience(1)
    bad.info["handle"] = object()
    with pytest.raises(TypeError):
        storage.write([bad], {"explorer": {"step": 2}})
    assert storage.read_state("explorer") == {"step": 1}
    with pytest.raises(TypeError):  # state that is not JSON: nothing of the write lands
        storage.write([make_experience(2)], {"explorer": object()})
    assert storage.read_state("explorer") == {"step": 1}
    assert storage.count() == 1


def test_task_results_filter_by_status(storage: SQLiteExperienceStorage) -> None:
    records = [
        TaskRecord("arith", "1", "0", "ok", None, 1, 4, 0.01),
        TaskRecord("arith", "1", "1", "failed", "task 1 failed: ValueError: bad", 2, 0, 0.02),
        TaskRecord("arith", "1", "2", "timeout", "task 2 timed out after 5s", 2, 0, 5.0),
        TaskRecord("arith", "", "7", "invalid", "row 7: missing key(s) ['answer']", 0, 0, 0.0),
        TaskRecord("arith", "2", "3", "ok", None, 1, 4, 0.03, score=0.75),
    ]
    storage.write_task_results(records)
    storage.write_task_results([])
    assert storage.task_results() == records
    assert storage.task_results("ok") == [records[0], records[4]]
    assert storage.task_results("failed") == [records[1]]
    assert storage.task_results("timeout") == [records[2]]
    assert storage.task_results("invalid") == [records[3]]
    assert storage.task_results("no-such-status") == []


def test_export_jsonl_lines_parse_and_match(
    storage: SQLiteExperienceStorage, tmp_path: Path
) -> None:
    exps = [make_experience(i) for i in range(3)]
    storage.write(exps)
    out = tmp_path / "export.jsonl"
    assert storage.export_jsonl(out) == 3
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3
    for original, line in zip(exps, lines, strict=True):
        row = json.loads(line)
        assert row == json.loads(json.dumps(original.to_dict()))
        assert row["eid"] == original.eid.uid
        assert row["tokens"] == original.tokens.tolist()
        assert row["action_mask"] == [1, 1, 1, 1]
        assert row["messages"][0]["content"].endswith("ünïcødé ✓")  # written as UTF-8
        assert_same(original, Experience.from_dict(row))


def test_wal_mode_is_on(storage: SQLiteExperienceStorage) -> None:
    with storage.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    # WAL is a property of the file: a plain sqlite3 connection sees it too
    with sqlite3.connect(storage.path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_reopening_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "buffer.db"  # parent directories are created
    written = [make_experience(i) for i in range(4)]
    first = SQLiteExperienceStorage(path)
    first.write(written[:3], {"explorer": {"step": 3}})
    first.write_task_results([TaskRecord("arith", "1", "0", "ok", None, 1, 3, 0.1)])

    # a second object on the same file, while the first is still open (trainer + explorer)
    second = SQLiteExperienceStorage(path)
    assert second.count() == 3
    assert [e.eid.task for e in second.read()] == ["task-0", "task-1", "task-2"]
    second.write(written[3:])
    assert first.count() == 4
    first.close()
    second.close()

    third = SQLiteExperienceStorage(path)
    try:
        assert third.count() == 4
        for original, stored in zip(written, third.read(), strict=True):
            assert_same(original, stored)
        assert third.task_results() == [TaskRecord("arith", "1", "0", "ok", None, 1, 3, 0.1)]
        assert third.read_state("explorer") == {"step": 3}
    finally:
        third.close()


def _written_buffer(path: Path, n: int = 200) -> bytes:
    """A closed buffer holding ``n`` experiences; its bytes."""
    storage = SQLiteExperienceStorage(path)
    storage.write([make_experience(i) for i in range(n)], {"explorer": {"step": 1}})
    storage.close()
    return path.read_bytes()


@pytest.mark.parametrize("damage", ["random_bytes", "truncated", "garbage_past_the_header"])
def test_a_corrupt_buffer_is_refused_when_opened(tmp_path: Path, damage: str) -> None:
    """SQLite opens a damaged file lazily (the first query fails, mid-run): open checks it."""
    from reinforge.buffer import BufferCorruptError, BufferStorageError

    path = tmp_path / "buffer.db"
    data = _written_buffer(path)
    if damage == "random_bytes":
        damaged = np.random.default_rng(0).bytes(len(data))
    elif damage == "truncated":
        damaged = data[: len(data) // 2]
    else:
        damaged = data[:4096] + b"\x5a" * (len(data) - 4096)
    path.write_bytes(damaged)
    with pytest.raises(BufferCorruptError) as err:
        SQLiteExperienceStorage(path)
    message = str(err.value)
    assert str(path) in message and "move it aside or delete it" in message, message
    assert isinstance(err.value, BufferStorageError) and isinstance(err.value, ValueError)
    assert path.read_bytes() == damaged  # the failed open changed nothing


def test_an_intact_buffer_still_opens_and_a_folder_is_not_called_corrupt(tmp_path: Path) -> None:
    from reinforge.buffer import BufferCorruptError, BufferStorageError

    path = tmp_path / "buffer.db"
    _written_buffer(path, n=3)
    storage = SQLiteExperienceStorage(path)
    assert storage.count() == 3 and storage.read_state("explorer") == {"step": 1}
    storage.close()
    (tmp_path / "folder.db").mkdir()
    with pytest.raises(BufferStorageError) as err:
        SQLiteExperienceStorage(tmp_path / "folder.db")
    assert not isinstance(err.value, BufferCorruptError)


def test_task_records_land_with_their_step_and_replace_a_rerun_of_it(
    storage: SQLiteExperienceStorage,
) -> None:
    """Exactly one record per task (issue: trust the run, 6): a step stored again after
    a resume replaces its records, a step that fails to store leaves none behind."""
    first = [TaskRecord("arith", "1", str(t), "ok", None, 1, 1, 0.1) for t in range(2)]
    storage.write([make_experience(0)], {"explorer": {"step": 1}}, first)
    other = [TaskRecord("arith-eval", "1", "0", "ok", None, 1, 1, 0.1)]
    storage.write_task_results(other)  # same batch name, another taskset: kept
    rerun = [TaskRecord("arith", "1", str(t), "failed", "boom", 2, 0, 0.2) for t in range(2)]
    storage.write([], {"explorer": {"step": 1}}, rerun)
    assert storage.task_results() == other + rerun
    bad = make_experience(1)
    bad.info["handle"] = object()
    step2 = [TaskRecord("arith", "2", "5", "ok", None, 1, 1, 0.1)]
    with pytest.raises(TypeError):
        storage.write([bad], {"explorer": {"step": 2}}, step2)
    assert storage.task_results() == other + rerun  # nothing of step 2 landed
    assert storage.read_state("explorer") == {"step": 1}


def test_a_buffer_written_before_task_scores_opens_and_records_them(tmp_path: Path) -> None:
    """A buffer whose task_results table predates the score column (an older run being
    resumed) gets the column: its old rows read as None, new rows keep their score."""
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE task_results (id INTEGER PRIMARY KEY AUTOINCREMENT, taskset VARCHAR(128)"
            " NOT NULL, batch VARCHAR(64) NOT NULL, task VARCHAR(64) NOT NULL, status VARCHAR(16)"
            " NOT NULL, error TEXT, attempts INTEGER NOT NULL, num_experiences INTEGER NOT NULL,"
            " elapsed FLOAT NOT NULL, created FLOAT NOT NULL)"
        )
        conn.execute(
            "INSERT INTO task_results (taskset, batch, task, status, error, attempts,"
            " num_experiences, elapsed, created) VALUES ('arith', '1', '0', 'ok', NULL, 1, 4,"
            " 0.5, 0.0)"
        )
    storage = SQLiteExperienceStorage(path)
    storage.write_task_results([TaskRecord("arith", "2", "1", "ok", None, 1, 4, 0.25, 1.0)])
    assert [(r.batch, r.score) for r in storage.task_results()] == [("1", None), ("2", 1.0)]
    storage.close()
    assert SQLiteExperienceStorage(path).task_results()[1].score == 1.0  # opened again
