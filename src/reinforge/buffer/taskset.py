"""Read a taskset (local jsonl, or json/parquet/csv via ``datasets``, or reasoning-gym) into Tasks.

Rows that cannot become a Task - malformed JSON lines, rows missing the prompt or
answer key - are named as ``file:line`` with the key; they are skipped (and
returned as ``InvalidRow`` so the explorer can store them as failed and report
them in one line) unless the taskset is ``strict``. A taskset with no usable row
is an error. In a folder, files named by split (``train-00000-of-00001.parquet``,
``test.jsonl``, ``data/validation-*.parquet``) are read for the configured
``split`` only; ``save_to_disk`` folders load through ``datasets.load_from_disk``.
"""

from __future__ import annotations

import json
import logging
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reinforge.buffer.taskset_config import TasksetConfig
from reinforge.core import Task

logger = logging.getLogger(__name__)

_LOADERS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}
_SPLIT_NAMES = {"train", "test", "validation", "valid", "val", "dev", "eval", "evaluation"}


class TasksetError(ValueError):
    """A taskset cannot be read."""


@dataclass
class InvalidRow:
    """A row that could not become a Task, and why (``where``: ``file:line``)."""

    taskset: str
    row: int
    error: str
    where: str = ""


@dataclass
class LoadedTaskset:
    name: str
    tasks: list[Task]
    invalid: list[InvalidRow]

    def summary(self, examples: int = 3) -> str:
        """One line for all skipped rows: how many, and the first few reasons."""
        first = "; ".join(bad.error for bad in self.invalid[:examples])
        more = f" (and {len(self.invalid) - examples} more)" if len(self.invalid) > examples else ""
        return f"taskset '{self.name}': skipped {len(self.invalid)} row(s): {first}{more}"


def _scan_jsonl(path: Path) -> tuple[list[dict[str, Any]], list[str], list[tuple[int, str]]]:
    """Good rows with their ``file:line``, and the bad lines with why."""
    good: list[dict[str, Any]] = []
    origins: list[str] = []
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
            origins.append(f"{path}:{lineno}")
    return good, origins, bad


def _split_of(path: Path) -> str | None:
    """The split a data file belongs to by the Hugging Face naming (``train-00000-of-00001``,
    ``test.jsonl``), or None for a file named otherwise."""
    head = re.split(r"[-_.]", path.stem, maxsplit=1)[0].lower()
    return head if head in _SPLIT_NAMES else None


def _pick_split(config: TasksetConfig, path: Path, files: list[Path]) -> list[Path]:
    """The files of the configured split: never train on a folder's test rows by accident."""
    splits = {f: _split_of(f) for f in files}
    named = {s for s in splits.values() if s}
    if not named:
        return files
    chosen = [f for f, s in splits.items() if s == config.split.lower()]
    if not chosen:
        raise TasksetError(
            f"taskset '{config.name}': '{path}' holds the splits {sorted(named)} but not "
            f"'{config.split}'; set `split:` to one of them"
        )
    return chosen


def _load_from_disk(config: TasksetConfig, path: Path) -> list[dict[str, Any]]:
    """Rows of a folder written by ``Dataset(Dict).save_to_disk``."""
    from datasets import DatasetDict, load_from_disk

    data = load_from_disk(str(path))
    if isinstance(data, DatasetDict):
        if config.split not in data:
            raise TasksetError(
                f"taskset '{config.name}': '{path}' holds the splits {sorted(data)} but not "
                f"'{config.split}'; set `split:` to one of them"
            )
        data = data[config.split]
    return data.to_list()


def read_rows(
    config: TasksetConfig, base_dir: Path | None = None
) -> tuple[list[dict[str, Any]], list[str], list[InvalidRow]]:
    """The taskset's raw rows with where each came from, plus the rows that could not be parsed."""
    if config.reasoning_gym is not None:
        rows = _reasoning_gym_rows(config)
        return (
            rows,
            [f"reasoning-gym:{config.reasoning_gym.name}:{i}" for i in range(len(rows))],
            [],
        )
    path = Path(config.path).expanduser()
    if not path.is_absolute() and base_dir is not None and not path.exists():
        path = base_dir / path
    if not path.exists():
        raise TasksetError(f"taskset '{config.name}': path '{config.path}' does not exist")
    if path.is_dir() and (
        (path / "dataset_dict.json").is_file() or (path / "state.json").is_file()
    ):
        rows = _load_from_disk(config, path)
        return rows, [f"{path}:row {i + 1}" for i in range(len(rows))], []
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix in _LOADERS and p.is_file())
        files = _pick_split(config, path, files)
    else:
        files = [path]
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
    origins: list[str] = []
    invalid: list[InvalidRow] = []
    if files[0].suffix == ".jsonl":
        # Scan line by line first: a bad line is then named exactly, and the good
        # lines still load (datasets would reject the whole file).
        for f in files:
            good, where, bad = _scan_jsonl(f)
            for lineno, message in bad:
                if config.strict:
                    raise TasksetError(f"taskset '{config.name}': {message}")
                invalid.append(InvalidRow(config.name, lineno - 1, message, f"{f}:{lineno}"))
            rows.extend(good)
            origins.extend(where)
        return rows, origins, invalid
    from datasets import load_dataset

    for f in files:
        try:
            part = load_dataset(_LOADERS[f.suffix], data_files=[str(f)], split="train").to_list()
        except Exception as exc:
            raise TasksetError(f"taskset '{config.name}': cannot read {f}: {exc}") from exc
        rows.extend(part)
        origins.extend(f"{f}:row {i + 1}" for i in range(len(part)))
    return rows, origins, invalid


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
    rows, origins, invalid = read_rows(config, base_dir)
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
                f"{origins[i]}: missing key(s) {missing} "
                f"(format.prompt_key='{fmt.prompt_key}', format.response_key='{fmt.response_key}'; "
                f"row keys: {sorted(row)})"
            )
            if config.strict:
                raise TasksetError(f"taskset '{config.name}': {message}")
            invalid.append(InvalidRow(config.name, i, message, origins[i]))
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
    loaded = LoadedTaskset(config.name, tasks, invalid)
    if not tasks:
        source = config.path or "reasoning-gym"
        if not rows and not invalid:
            raise TasksetError(f"taskset '{config.name}': {source} has no rows")
        raise TasksetError(
            f"taskset '{config.name}': 0 usable tasks in {source}; {loaded.summary()}"
        )
    return loaded
