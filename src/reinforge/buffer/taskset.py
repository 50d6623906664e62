"""Read a taskset (local jsonl, or json/parquet/csv via ``datasets``, or reasoning-gym) into Tasks.

Rows that cannot become a Task - malformed JSON lines, rows missing the prompt or
answer key - are reported with the file, row and key; they are skipped (and
returned as ``InvalidRow`` so the explorer can store them as failed) unless the
taskset is ``strict``.
"""

from __future__ import annotations

import json
import logging
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reinforge.buffer.taskset_config import TasksetConfig
from reinforge.core import Task

logger = logging.getLogger(__name__)

_LOADERS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}


class TasksetError(ValueError):
    """A taskset cannot be read."""


@dataclass
class InvalidRow:
    """A row that could not become a Task, and why."""

    taskset: str
    row: int
    error: str


@dataclass
class LoadedTaskset:
    name: str
    tasks: list[Task]
    invalid: list[InvalidRow]


def _scan_jsonl(path: Path) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
    good: list[dict[str, Any]] = []
    bad: list[tuple[int, str]] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                bad.append(
                    (lineno, f"{path}:{lineno}: malformed JSON ({exc.msg} at column {exc.colno})")
                )
                continue
            if not isinstance(row, dict):
                bad.append(
                    (lineno, f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
                )
                continue
            good.append(row)
    return good, bad


def read_rows(
    config: TasksetConfig, base_dir: Path | None = None
) -> tuple[list[dict[str, Any]], list[InvalidRow]]:
    """The taskset's raw rows, plus the rows that could not be parsed."""
    if config.reasoning_gym is not None:
        return _reasoning_gym_rows(config), []
    path = Path(config.path).expanduser()
    if not path.is_absolute() and base_dir is not None and not path.exists():
        path = base_dir / path
    if not path.exists():
        raise TasksetError(f"taskset '{config.name}': path '{config.path}' does not exist")
    files = sorted(p for p in path.iterdir() if p.suffix in _LOADERS) if path.is_dir() else [path]
    split_files = [f for f in files if f.stem == config.split]
    files = split_files or files
    if not files:
        raise TasksetError(
            f"taskset '{config.name}': no .jsonl/.json/.parquet/.csv files in '{path}'"
        )
    suffixes = {f.suffix for f in files}
    if len(suffixes) > 1 or next(iter(suffixes)) not in _LOADERS:
        raise TasksetError(
            f"taskset '{config.name}': unsupported or mixed file types {sorted(suffixes)}"
        )
    rows: list[dict[str, Any]] = []
    invalid: list[InvalidRow] = []
    if files[0].suffix == ".jsonl":
        # Scan line by line first: a bad line is then named exactly, and the good
        # lines still load (datasets would reject the whole file).
        for f in files:
            good, bad = _scan_jsonl(f)
            for lineno, message in bad:
                if config.strict:
                    raise TasksetError(f"taskset '{config.name}': {message}")
                logger.warning("taskset '%s': skipping %s", config.name, message)
                invalid.append(InvalidRow(config.name, lineno - 1, message))
            rows.extend(good)
        return rows, invalid
    from datasets import load_dataset

    try:
        dataset = load_dataset(
            _LOADERS[files[0].suffix], data_files=[str(f) for f in files], split="train"
        )
    except Exception as exc:
        raise TasksetError(
            f"taskset '{config.name}': cannot read {[str(f) for f in files]}: {exc}"
        ) from exc
    return dataset.to_list(), invalid


def _reasoning_gym_rows(config: TasksetConfig) -> list[dict[str, Any]]:
    import reasoning_gym

    src = config.reasoning_gym
    try:
        dataset = reasoning_gym.create_dataset(src.name, size=src.size, seed=src.seed, **src.config)
    except Exception as exc:
        raise TasksetError(
            f"taskset '{config.name}': reasoning-gym dataset '{src.name}': {exc}"
        ) from exc
    return [
        {
            "question": entry["question"],
            "answer": entry["answer"],
            "metadata": _jsonable(entry.get("metadata", {})),
        }
        for entry in dataset
    ]


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def load_taskset(
    config: TasksetConfig,
    *,
    base_dir: Path | None = None,
    default_workflow: str | None = None,
    default_reward_fn: str | None = None,
) -> LoadedTaskset:
    """Build Tasks from a taskset config; rows missing required keys become InvalidRows."""
    rows, invalid = read_rows(config, base_dir)
    fmt = config.format.to_format_config()
    rollout = config.rollout_args.to_generation_config()
    workflow = config.default_workflow_type or default_workflow
    reward_fn = config.default_reward_fn_type or default_reward_fn
    if workflow is None:
        raise TasksetError(f"taskset '{config.name}': no workflow; set default_workflow_type")
    # the answer key is required unless the taskset declares it has none (response_key: null)
    required = [k for k in (fmt.prompt_key, fmt.response_key) if k]
    order = list(range(len(rows)))
    if config.shuffle:
        random.Random(config.seed).shuffle(order)
    if config.limit is not None:
        order = order[: config.limit]
    tasks: list[Task] = []
    for i in order:
        row = rows[i]
        missing = [k for k in required if row.get(k) is None]
        if missing:
            message = (
                f"taskset '{config.name}' row {i}: missing key(s) {missing} "
                f"(format.prompt_key='{fmt.prompt_key}', format.response_key='{fmt.response_key}'; "
                f"row keys: {sorted(row)})"
            )
            if config.strict:
                raise TasksetError(message)
            logger.warning("skipping %s", message)
            invalid.append(InvalidRow(config.name, i, message))
            continue
        tasks.append(
            Task(
                workflow=workflow,
                repeat_times=config.repeat_times,
                format_args=fmt,
                rollout_args=rollout,
                workflow_args=dict(config.workflow_args),
                reward_fn_args=dict(config.reward_fn_args),
                is_eval=config.is_eval,
                reward_fn=reward_fn,
                raw_task=row,
                task_id=i,
                index={"taskset": config.name, "row": i},
            )
        )
    return LoadedTaskset(config.name, tasks, invalid)
