"""Everything the viewer shows of one run directory, as JSON-ready dicts.

A run directory holds ``config.json``, ``metrics.jsonl`` and the buffer
``buffer.db``; any of them may be missing (a run that has only just started, a
copied folder), and the viewer then shows what there is. The buffer is read through
``ReadOnlyStorage`` and re-queried on every call, so a run that is still going
shows its new steps on reload.

Vocabulary: a *step* is an explore step (the buffer's ``batch``, a number); a
*group* is the experiences of one task in a step (GRPO's group); task *records*
(table ``task_results``) say how each task ended: ok, failed, timeout, invalid or
masked, with the error text. Eval passes store records (batch ``eval<step>``) but
no experiences.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from reinforge.buffer.sqlite_storage import (
    BufferStorageError,
    experiences_table,
    task_results_table,
)
from reinforge.core import Experience
from reinforge.viewer.groups import (
    Filters,
    Group,
    build_groups,
    choices,
    filter_groups,
    first_line,
    sort_key,
)
from reinforge.viewer.metrics import charts, read_series
from reinforge.viewer.rows import StepCache, finite, floats, is_masked
from reinforge.viewer.storage import ReadOnlyStorage
from reinforge.viewer.tokens import TokenDecoder, load_decoder


class NotFound(LookupError):
    """The asked-for step, experience or task is not in this run."""


class RunView:
    """Read access to one run directory for the viewer's API."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.config = self._read_config()
        self.buffer_path = self._buffer_path()
        self.storage: ReadOnlyStorage | None = None
        self.buffer_error: str | None = None
        self._cache = StepCache()
        self._decoder: TokenDecoder | None = None
        self._decoder_lock = threading.Lock()

    # ---- files -------------------------------------------------------------------------

    def _read_config(self) -> dict[str, Any]:
        path = self.run_dir / "config.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _buffer_path(self) -> Path:
        """``buffer.db`` in the run dir, else the path the config names (if it exists)."""
        default = self.run_dir / "buffer.db"
        storage = ((self.config.get("buffer") or {}).get("storage") or {}).get("path")
        if not default.is_file() and storage:
            named = Path(storage)
            candidate = named if named.is_absolute() else self.run_dir / named
            if candidate.is_file():
                return candidate
        return default

    def _store(self) -> ReadOnlyStorage | None:
        """The buffer, opened on first use (and retried until it exists)."""
        if self.storage is None:
            try:
                self.storage = ReadOnlyStorage(self.buffer_path)
                self.buffer_error = None
            except BufferStorageError as exc:
                self.buffer_error = str(exc)
        return self.storage

    @property
    def decoder(self) -> TokenDecoder:
        with self._decoder_lock:
            if self._decoder is None:
                self._decoder = load_decoder(self.config)
            return self._decoder

    def close(self) -> None:
        if self.storage is not None:
            self.storage.close()

    # ---- run and metrics ---------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        store = self._store()
        model = self.config.get("model") or {}
        return {
            "run_dir": str(self.run_dir),
            "project": self.config.get("project"),
            "name": self.config.get("name"),
            "mode": self.config.get("mode"),
            "model": model.get("model_path"),
            "engine": model.get("engine"),
            "buffer": str(self.buffer_path),
            "buffer_error": self.buffer_error,
            "experiences": store.count() if store else 0,
            "read_only": bool(store and not store.immutable),
        }

    def metrics(self) -> dict[str, Any]:
        series = read_series(self.run_dir / "metrics.jsonl")
        return {"charts": charts(series), "series": series}

    # ---- steps and groups --------------------------------------------------------------

    def steps(self) -> dict[str, Any]:
        """Explore steps (with experience and task counts) and eval passes (task counts)."""
        store = self._store()
        if store is None:
            return {"steps": [], "eval": [], "buffer_error": self.buffer_error}
        e = experiences_table.c
        t = task_results_table.c
        with store.engine.connect() as conn:
            exp_rows = conn.execute(
                select(
                    e.batch, func.count(), func.avg(e.reward), func.max(e.model_version)
                ).group_by(e.batch)
            ).all()
            task_rows = conn.execute(
                select(t.batch, t.taskset, t.status, func.count()).group_by(
                    t.batch, t.taskset, t.status
                )
            ).all()
            task_counts = conn.execute(
                select(t.batch, func.count(func.distinct(t.task))).group_by(t.batch)
            ).all()
        batches: dict[str, dict[str, Any]] = {}

        def entry(batch: str) -> dict[str, Any]:
            return batches.setdefault(
                batch,
                {
                    "batch": batch,
                    "experiences": 0,
                    "reward_mean": None,
                    "model_version": None,
                    "tasks": 0,
                    "records": {},
                    "tasksets": [],
                },
            )

        for batch, count, reward, version in exp_rows:
            item = entry(batch)
            item.update(experiences=count, reward_mean=finite(reward), model_version=version)
        for batch, taskset, status, records in task_rows:
            item = entry(batch)
            item["records"][status] = item["records"].get(status, 0) + records
            if taskset not in item["tasksets"]:
                item["tasksets"].append(taskset)
        for batch, tasks in task_counts:
            entry(batch)["tasks"] = tasks
        ordered = [batches[b] for b in sorted(batches, key=sort_key)]
        steps = [dict(item, step=int(item["batch"])) for item in ordered if item["batch"].isdigit()]
        others = [item for item in ordered if not item["batch"].isdigit()]
        return {"steps": steps, "eval": others, "buffer_error": None}

    def _experience_rows(self, batch: str) -> list[dict[str, Any]]:
        store = self._store()
        if store is None:
            return []
        e = experiences_table.c
        with store.engine.connect() as conn:
            count = conn.execute(
                select(func.count()).select_from(experiences_table).where(e.batch == batch)
            ).scalar_one()

        def load() -> list[tuple[int, bytes]]:
            with store.engine.connect() as conn:
                query = select(e.id, e.data).where(e.batch == batch).order_by(e.id)
                return [(row.id, row.data) for row in conn.execute(query)]

        return self._cache.get(batch, count, load)

    def _records(self, **where: Any) -> list[dict[str, Any]]:
        store = self._store()
        if store is None:
            return []
        t = task_results_table.c
        query = select(*store.task_result_columns()).order_by(t.id)
        for name, value in where.items():
            if value is None:
                continue
            column = getattr(t, name)
            query = query.where(column.in_(value) if isinstance(value, list) else column == value)
        with store.engine.connect() as conn:
            rows = [dict(row._mapping) for row in conn.execute(query)]
        for row in rows:
            row["error_line"] = first_line(row["error"])
            row["elapsed"] = finite(row["elapsed"], 3)
            row["score"] = finite(row.get("score"))  # absent in buffers written before it
        return rows

    def _groups(self, batch: str) -> dict[str, Group]:
        """Groups of one batch: its experiences and task records, keyed by task id."""
        return build_groups(self._experience_rows(batch), self._records(batch=batch))

    def step(self, step: int | str, filters: Filters | None = None) -> dict[str, Any]:
        """The groups of one step that pass ``filters``, with the values one can filter by."""
        batch = str(step)
        groups = self._groups(batch)
        if not groups:
            raise NotFound(f"step {step} has no experiences and no task records")
        return {
            "step": batch,
            "groups": filter_groups(groups, filters or Filters()),
            "total_groups": len(groups),
            "choices": choices(groups.values()),
        }

    # ---- one experience ----------------------------------------------------------------

    def experience(self, row_id: int) -> dict[str, Any]:
        """Everything stored for one experience, with the response split into tokens."""
        store = self._store()
        if store is None:
            raise NotFound(self.buffer_error or "no buffer")
        e = experiences_table.c
        with store.engine.connect() as conn:
            row = conn.execute(select(e.data).where(e.id == row_id)).first()
        if row is None:
            raise NotFound(f"no experience with id {row_id}")
        exp = Experience.from_bytes(row.data)
        ids = [int(i) for i in exp.response_tokens.tolist()]
        decoder = self.decoder
        try:
            pieces = decoder.pieces(ids)
        except Exception as exc:  # a tokenizer that chokes on an id: show ids instead
            pieces = [f"⟨{i}⟩" for i in ids]
            tokenizer = f"{decoder.name} failed ({exc}); raw ids"
        else:
            tokenizer = decoder.name
        info = exp.info or {}
        return {
            "id": row_id,
            "uid": exp.eid.uid,
            "step": str(exp.eid.batch),
            "task": str(exp.eid.task),
            "run": int(exp.eid.run),
            "turn_step": int(exp.eid.step),
            "reward": finite(exp.reward),
            "taskset": info.get("taskset"),
            "masked": is_masked(info),
            "info": info,
            "metrics": exp.metrics,
            "messages": exp.messages,
            "tools": exp.tools,
            "prompt_text": exp.prompt_text,
            "response_text": exp.response_text,
            "truncate_status": exp.truncate_status,
            "prompt_length": int(exp.prompt_length),
            "tokenizer": tokenizer,
            "tokens": {
                "ids": ids,
                "pieces": pieces,
                "action_mask": [int(m) for m in exp.action_mask.tolist()],
                "logprobs": floats(exp.logprobs),
                "advantages": floats(exp.advantages),
            },
        }

    # ---- task records and compare ------------------------------------------------------

    def tasks(
        self,
        statuses: list[str] | None = None,
        taskset: str | None = None,
        step: str | None = None,
        limit: int = 500,
    ) -> dict[str, Any]:
        """Task records, newest last, optionally by status, taskset and step (batch)."""
        rows = self._records(status=statuses or None, taskset=taskset, batch=step)
        return {"total": len(rows), "tasks": rows[-limit:] if limit else rows}

    def task_steps(self, task: str, taskset: str | None = None) -> list[str]:
        """The explore steps in which a task id has experiences or records."""
        store = self._store()
        if store is None:
            return []
        e, t = experiences_table.c, task_results_table.c
        record_query = select(t.batch).where(t.task == task)
        if taskset is not None:
            record_query = record_query.where(t.taskset == taskset)
        with store.engine.connect() as conn:
            batches = {b for (b,) in conn.execute(select(e.batch).where(e.task == task).distinct())}
            batches |= {b for (b,) in conn.execute(record_query.distinct())}
        return sorted((b for b in batches if b.isdigit()), key=sort_key)

    def compare(
        self,
        task: str,
        step_a: str | None = None,
        step_b: str | None = None,
        taskset: str | None = None,
    ) -> dict[str, Any]:
        """One task's group at two steps (default: the first and the last it ran in)."""
        steps = self.task_steps(task, taskset)
        if not steps:
            raise NotFound(f"task {task} is in no explore step")
        step_a = step_a or steps[0]
        step_b = step_b or steps[-1]
        sides = []
        for step in (step_a, step_b):
            group = self._groups(step).get(task)
            if group is None:
                raise NotFound(f"task {task} is not in step {step}")
            sides.append(dict(group.to_json(), step=step))
        return {"task": task, "steps": steps, "a": sides[0], "b": sides[1]}
