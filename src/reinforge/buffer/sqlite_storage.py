"""Experience storage in one SQLite file, through SQLAlchemy.

Experiences are stored as compact binary blobs (``Experience.to_bytes``) next to
the columns one filters on (ids, reward, model version). Task outcomes - including
failures with their error messages - go to a second table, so nothing the explorer
saw is silently dropped. A small key/value ``state`` table holds resume points
(the explorer's taskset cursor), written in the same transaction as the
experiences they describe. WAL journaling lets a trainer read while the explorer
writes; every ``write`` is one transaction, so a crash never leaves half a batch.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Column,
    Float,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    func,
    select,
)

from reinforge.core import Experience

metadata = MetaData()

experiences_table = Table(
    "experiences",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("uid", String(128), nullable=False, index=True),
    Column("batch", String(64), nullable=False, index=True),
    Column("task", String(64), nullable=False),
    Column("run", Integer, nullable=False),
    Column("step", Integer, nullable=False),
    Column("reward", Float, nullable=True),
    Column("model_version", Integer, nullable=False),
    Column("created", Float, nullable=False),
    Column("data", LargeBinary, nullable=False),
)

task_results_table = Table(
    "task_results",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("taskset", String(128), nullable=False),
    Column("batch", String(64), nullable=False),
    Column("task", String(64), nullable=False),
    Column("status", String(16), nullable=False, index=True),
    Column("error", Text, nullable=True),
    Column("attempts", Integer, nullable=False),
    Column("num_experiences", Integer, nullable=False),
    Column("elapsed", Float, nullable=False),
    Column("created", Float, nullable=False),
    # the mean score of the task's runs (added after the first release: older buffers
    # get the column when opened, see ``_add_missing_columns``)
    Column("score", Float, nullable=True),
)

state_table = Table(
    "state",
    metadata,
    Column("key", String(128), primary_key=True),
    Column("value", Text, nullable=False),
    Column("updated", Float, nullable=False),
)


def _inserted_columns(table: Table) -> list[str]:
    """The columns a new row of ``table`` gives values for: all but an autoincremented id."""
    return [column.name for column in table.columns if column.autoincrement is not True]


def _insert_sql(table: Table) -> str:
    """``INSERT`` of one row of ``table`` with ``?`` placeholders, for DB-API ``executemany``.

    The values go in the table's column order; the row tuples of ``write`` follow it.
    """
    columns = _inserted_columns(table)
    return (
        f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    )


def _upsert_sql(table: Table) -> str:
    """``_insert_sql`` that overwrites the row with the same primary key instead of failing."""
    keys = [column.name for column in table.primary_key.columns]
    updates = ", ".join(
        f"{name} = excluded.{name}" for name in _inserted_columns(table) if name not in keys
    )
    return f"{_insert_sql(table)} ON CONFLICT({', '.join(keys)}) DO UPDATE SET {updates}"


# Plain SQL for the write path (see ``SQLiteExperienceStorage.write``), from the tables above.
_INSERT_EXPERIENCE = _insert_sql(experiences_table)
_INSERT_TASK_RESULT = _insert_sql(task_results_table)
_DELETE_TASK_RESULTS = f"DELETE FROM {task_results_table.name} WHERE taskset = ? AND batch = ?"
_UPSERT_STATE = _upsert_sql(state_table)


@dataclass
class TaskRecord:
    """Outcome of one task as stored: ``status`` is ok, failed, timeout, invalid or masked."""

    taskset: str
    batch: str
    task: str
    status: str
    error: str | None
    attempts: int
    num_experiences: int
    elapsed: float
    #: the mean score (``accuracy`` metric, else reward) of the task's runs; None when
    #: it produced none (failed) or it was not recorded (buffers written before it)
    score: float | None = None


class BufferStorageError(ValueError):
    """The buffer file cannot be used (not an SQLite database, unreadable, not creatable)."""


class BufferCorruptError(BufferStorageError):
    """The buffer file is damaged: not an SQLite database, truncated, or with malformed pages."""


# SQLite's result codes for a damaged file (anything else, e.g. a folder or no
# permission, is a BufferStorageError: the file may well be fine)
_DAMAGED = {"SQLITE_CORRUPT", "SQLITE_NOTADB"}
_WHAT_TO_DO = (
    "move it aside or delete it to start a fresh buffer, or point buffer.storage.path elsewhere"
)


def _corrupt(path: Path, detail: str) -> BufferCorruptError:
    return BufferCorruptError(
        f"{path} is not a usable buffer: {path.name} is corrupt or unreadable ({detail}); "
        f"{_WHAT_TO_DO}"
    )


def _unusable(path: Path, exc: BaseException) -> BufferStorageError:
    """The error for a buffer SQLite refused: corrupt (named so) or otherwise unusable."""
    if getattr(exc, "sqlite_errorname", None) in _DAMAGED:
        return _corrupt(path, str(exc))
    return BufferStorageError(f"{path} is not a usable buffer ({exc}); {_WHAT_TO_DO}")


class SQLiteExperienceStorage:
    """Append-only experience store backed by one SQLite file."""

    def __init__(self, path: str | Path) -> None:
        from sqlalchemy.exc import DatabaseError

        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BufferStorageError(
                f"cannot create the buffer's folder {self.path.parent}: {exc}"
            ) from None
        # timeout: wait for another process's lock (e.g. its WAL switch) from the
        # very first statement instead of failing with "database is locked"
        self.engine = create_engine(f"sqlite:///{self.path}", connect_args={"timeout": 30})
        event.listen(self.engine, "connect", _sqlite_pragmas)
        try:
            self._check_integrity()  # before anything is written into a damaged file
            self._create_tables()
            self._add_missing_columns()
        except DatabaseError as exc:
            self.engine.dispose()
            raise _unusable(self.path, exc.orig) from None
        except BufferStorageError:
            self.engine.dispose()
            raise
        self._lock = threading.Lock()

    def _check_integrity(self) -> None:
        """Refuse a damaged buffer now: SQLite reads pages only when a query needs them,
        so a damaged file would otherwise open and fail mid-run, at its first read or write.

        ``PRAGMA quick_check`` walks every page (about 0.1 s for 300 MB when cached).
        """
        with self.engine.connect() as conn:
            problems = [row[0] for row in conn.exec_driver_sql("PRAGMA quick_check(3)")]
        if problems != ["ok"]:
            raise _corrupt(self.path, "; ".join(problems))

    def _create_tables(self, attempts: int = 5) -> None:
        """Create missing tables; tolerate another process creating them at the same moment.

        SQLAlchemy checks for a table and then creates it in two statements, so two
        processes opening a new buffer together (an explore and a train process) can
        both decide to create it; the loser gets "already exists" and looks again.
        """
        from sqlalchemy.exc import OperationalError

        for attempt in range(attempts):
            try:
                metadata.create_all(self.engine)
                return
            except OperationalError as exc:
                if "already exists" not in str(exc) or attempt == attempts - 1:
                    raise

    def _add_missing_columns(self) -> None:
        """Columns added to a table after a buffer was written (``task_results.score``)
        are added to it, empty for the old rows, so an older run can be resumed."""
        from sqlalchemy.exc import OperationalError

        present = {c.name for c in self.task_result_columns()}
        for column in task_results_table.columns:
            if column.name in present:
                continue
            kind = column.type.compile(dialect=self.engine.dialect)
            try:
                with self.engine.begin() as conn:
                    conn.exec_driver_sql(
                        f"ALTER TABLE {task_results_table.name} ADD COLUMN {column.name} {kind}"
                    )
            except OperationalError as exc:  # another process added it first
                if "duplicate column" not in str(exc):
                    raise

    def write(
        self,
        experiences: list[Experience],
        state: Mapping[str, Any] | None = None,
        task_records: list[TaskRecord] | None = None,
    ) -> int:
        """Append experiences in one transaction; returns how many were written.

        ``state`` (name → JSON-serialisable value, e.g. the explorer's taskset cursor)
        and ``task_records`` (the outcome of each task of the step) are saved in the
        same transaction, so what a restarted run reads back with ``read_state``
        always matches the experiences and records that were stored. Records replace
        any earlier ones of the same (taskset, batch): a step run again after a crash
        is recorded once.
        """
        if not experiences and not state and not task_records:
            return 0
        now = time.time()
        rows = []
        for exp in experiences:
            eid = exp.eid
            reward = exp.reward
            rows.append(
                (  # experiences_table's columns, in order
                    eid.uid,
                    str(eid.batch),
                    str(eid.task),
                    int(eid.run),
                    int(eid.step),
                    None if reward is None else float(reward),  # numpy/torch scalars too
                    int(exp.info.get("model_version", 0)),
                    now,
                    exp.to_bytes(),
                )
            )
        states = [(key, json.dumps(value), now) for key, value in (state or {}).items()]
        # Plain DB-API executemany inside the SQLAlchemy transaction: the same single
        # commit, without SQLAlchemy's per-row parameter processing (a third of the
        # cost of a write of small experiences).
        with self._lock, self.engine.begin() as conn:
            if rows:
                conn.exec_driver_sql(_INSERT_EXPERIENCE, rows)
            if states:
                conn.exec_driver_sql(_UPSERT_STATE, states)
            if task_records:
                batches = sorted({(r.taskset, str(r.batch)) for r in task_records})
                conn.exec_driver_sql(_DELETE_TASK_RESULTS, batches)
                conn.exec_driver_sql(_INSERT_TASK_RESULT, _record_rows(task_records, now))
        return len(rows)

    def read_state(self, key: str, default: Any = None) -> Any:
        """The value last saved under ``key`` by ``write(..., state=...)``, else ``default``."""
        query = select(state_table.c.value).where(state_table.c.key == key)
        with self.engine.connect() as conn:
            value = conn.execute(query).scalar_one_or_none()
        return default if value is None else json.loads(value)

    def write_task_results(self, records: list[TaskRecord]) -> None:
        """Task records on their own (e.g. rows a taskset could not read), replacing
        earlier records of the same (taskset, batch) as ``write`` does."""
        self.write([], None, records)

    def count(self) -> int:
        with self.engine.connect() as conn:
            return int(
                conn.execute(select(func.count()).select_from(experiences_table)).scalar_one()
            )

    def read(self, offset: int = 0, limit: int | None = None) -> list[Experience]:
        """Experiences in insertion order, starting after ``offset`` rows."""
        query = select(experiences_table.c.data).order_by(experiences_table.c.id).offset(offset)
        if limit is not None:
            query = query.limit(limit)
        with self.engine.connect() as conn:
            return [Experience.from_bytes(row[0]) for row in conn.execute(query)]

    def read_batch(self, batch: int | str) -> list[Experience]:
        """Experiences of one explore step (``eid.batch``), in insertion order."""
        query = (
            select(experiences_table.c.data)
            .where(experiences_table.c.batch == str(batch))
            .order_by(experiences_table.c.id)
        )
        with self.engine.connect() as conn:
            return [Experience.from_bytes(row[0]) for row in conn.execute(query)]

    def iter_experiences(self, chunk: int = 1000) -> Iterator[Experience]:
        offset = 0
        while True:
            batch = self.read(offset, chunk)
            if not batch:
                return
            yield from batch
            offset += len(batch)

    def task_result_columns(self) -> list[Any]:
        """The columns of ``task_results`` this file has: all of them once opened for
        writing; a buffer written before a column was added and opened read-only (the
        viewer) lacks it."""
        with self.engine.connect() as conn:
            info = conn.exec_driver_sql(f"PRAGMA table_info({task_results_table.name})")
            present = {row[1] for row in info}
        return [c for c in task_results_table.columns if c.name in present]

    def task_results(self, status: str | None = None) -> list[TaskRecord]:
        query = select(*self.task_result_columns()).order_by(task_results_table.c.id)
        if status is not None:
            query = query.where(task_results_table.c.status == status)
        fields = TaskRecord.__dataclass_fields__
        with self.engine.connect() as conn:
            return [
                TaskRecord(**{k: v for k, v in row._mapping.items() if k in fields})
                for row in conn.execute(query)
            ]

    def export_jsonl(self, path: str | Path) -> int:
        """Write every experience as one JSON object per line; returns the count."""
        n = 0
        with open(path, "w", encoding="utf-8") as fh:
            for exp in self.iter_experiences():
                fh.write(json.dumps(exp.to_dict(), ensure_ascii=False) + "\n")
                n += 1
        return n

    def close(self) -> None:
        self.engine.dispose()


def _record_rows(records: list[TaskRecord], now: float) -> list[tuple[Any, ...]]:
    """``records`` as rows of ``_INSERT_TASK_RESULT`` (task_results_table's columns, in order)."""
    return [
        (
            rec.taskset,
            str(rec.batch),
            rec.task,
            rec.status,
            rec.error,
            int(rec.attempts),
            int(rec.num_experiences),
            float(rec.elapsed),
            now,
            None if rec.score is None else float(rec.score),
        )
        for rec in records
    ]


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA busy_timeout=30000")
    # WAL is a property of the file: only the first opener switches it. The switch
    # needs an exclusive lock and SQLite reports "locked" at once instead of waiting
    # when another process holds the file, so retry for a while.
    deadline = time.monotonic() + 30
    while cur.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        try:
            cur.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()
