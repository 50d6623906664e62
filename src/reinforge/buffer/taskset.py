"""Read a taskset (local jsonl, or json/parquet/csv via ``datasets``, or reasoning-gym) into Tasks.

Rows that cannot become a Task - malformed JSON lines, rows missing the prompt or
answer key - are named as ``file:line`` (``file:row N`` for parquet/csv/json and
dataset rows) with the cause; they are skipped (and returned as ``InvalidRow`` so
the explorer can store them as failed and report them with one line,
:meth:`LoadedTaskset.summary`) unless the taskset is ``strict``. A taskset with no
usable row is an error naming the file, the cause and the first rows.

A folder is a Hugging Face dataset: its splits are found as ``datasets.load_dataset``
finds them (``train-00000-of-00001.parquet``, ``data/test.jsonl``, ``train/`` folders,
the ``configs`` of a README, chosen by ``subset_name``), and ``save_to_disk`` folders
load through ``datasets.load_from_disk``. Only one split is ever read: the configured
``split``, else ``train`` for a training taskset (Trinity's default) and the only
split for an eval taskset; otherwise the folder is refused with the splits it holds.
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
    """A row that could not become a Task, and why.

    ``where`` is ``file:line`` (or ``file:row N``); ``error`` is the full message,
    ``where: reason (hint)``; ``reason`` (e.g. ``missing key(s) ['question']``) is
    what rows skipped for the same cause share, so they can be counted together.
    """

    taskset: str
    row: int
    error: str
    where: str = ""
    reason: str = ""
    hint: str = ""


@dataclass
class LoadedTaskset:
    name: str
    tasks: list[Task]
    invalid: list[InvalidRow]
    source: str = ""

    def summary(self, examples: int = 3) -> str:
        """One line for all skipped rows: how many, by cause, with the first rows of each."""
        total = len(self.tasks) + len(self.invalid)
        return (
            f"taskset '{self.name}': {self.source}: skipped {len(self.invalid)} of {total} "
            f"row(s): {_causes(self.invalid, self.source, examples, every=not self.tasks)}"
        )


def _short(where: str, source: str) -> str:
    """``where`` without the folder part of ``source`` (the summary names that once)."""
    folder = str(Path(source).parent if Path(source).suffix else Path(source)) + "/"
    return where[len(folder) :] if source and where.startswith(folder) else where


def _causes(invalid: list[InvalidRow], source: str, examples: int, every: bool = False) -> str:
    """The skipped rows grouped by cause: ``N row(s): cause (hint; first: f:1, f:2, ...)``.

    ``every``: no row was usable (a lone cause then reads ``every row: cause``).
    """
    groups: dict[str, list[InvalidRow]] = {}
    for bad in invalid:
        groups.setdefault(bad.reason or bad.error, []).append(bad)
    parts = []
    for reason, rows in groups.items():
        first = ", ".join(_short(r.where, source) for r in rows[:examples] if r.where)
        more = ", ..." if len(rows) > examples else ""
        hint = f"{rows[0].hint}; " if rows[0].hint else ""
        lead = "every row" if every and len(groups) == 1 else f"{len(rows)} row(s)"
        parts.append(f"{lead}: {reason} ({hint}first: {first}{more})")
    return "; ".join(parts)


def _invalid(
    config: TasksetConfig, row: int, where: str, reason: str, hint: str = ""
) -> InvalidRow:
    """An InvalidRow; raises instead for a ``strict`` taskset."""
    error = f"{where}: {reason}" + (f" ({hint})" if hint else "")
    if config.strict:
        raise TasksetError(f"taskset '{config.name}': {error}")
    return InvalidRow(config.name, row, error, where, reason, hint)


def _scan_jsonl(
    config: TasksetConfig, path: Path
) -> tuple[list[dict[str, Any]], list[str], list[InvalidRow]]:
    """Good rows with their ``file:line``, and the bad lines with why."""
    good: list[dict[str, Any]] = []
    origins: list[str] = []
    bad: list[InvalidRow] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                hint = f"{exc.msg} at column {exc.colno}"
                bad.append(_invalid(config, lineno - 1, where, "malformed JSON", hint))
                continue
            if not isinstance(row, dict):
                reason = f"expected a JSON object, got {type(row).__name__}"
                bad.append(_invalid(config, lineno - 1, where, reason))
                continue
            good.append(row)
            origins.append(where)
    return good, origins, bad


def _choose_split(config: TasksetConfig, path: Path, available: list[str]) -> str:
    """The one split of a dataset folder to read: never mix a folder's test rows into training."""
    found = sorted(available)
    if config.split is not None:
        if config.split in available:
            return config.split
        raise TasksetError(
            f"taskset '{config.name}': '{path}' holds the splits {found} but not "
            f"'{config.split}'; set `split:` to one of them"
        )
    if not config.is_eval and "train" in available:
        return "train"  # Trinity's default split
    if config.is_eval and len(available) == 1:
        return available[0]
    raise TasksetError(
        f"taskset '{config.name}': '{path}' holds the splits {found}; set `split:` to the "
        "one to read (splits are never mixed"
        + (")" if config.is_eval else "; a training taskset reads 'train' by default)")
    )


def _load_from_disk(config: TasksetConfig, path: Path) -> list[dict[str, Any]]:
    """Rows of a folder written by ``Dataset(Dict).save_to_disk``."""
    from datasets import DatasetDict, load_from_disk

    try:
        data = load_from_disk(str(path))
    except Exception as exc:
        raise TasksetError(f"taskset '{config.name}': cannot read {path}: {exc}") from exc
    if isinstance(data, DatasetDict):
        data = data[_choose_split(config, path, list(data))]
    return data.to_list()


def _split_files(config: TasksetConfig, path: Path) -> list[Path]:
    """The data files of the chosen split (and subset) of a dataset folder."""
    import datasets

    if not any(f.suffix in _LOADERS for f in path.rglob("*")):
        raise TasksetError(
            f"taskset '{config.name}': no .jsonl/.json/.parquet/.csv files in '{path}'"
        )
    try:
        builder = datasets.load_dataset_builder(str(path), name=config.subset_name)
    except Exception as exc:
        message = " ".join(str(exc).split())
        hint = " (set `subset_name:`)" if "config" in message.lower() else ""
        raise TasksetError(
            f"taskset '{config.name}': cannot read the dataset folder '{path}': {message}{hint}"
        ) from exc
    by_split = {str(k): [Path(f) for f in v] for k, v in (builder.config.data_files or {}).items()}
    if not by_split:
        raise TasksetError(
            f"taskset '{config.name}': no .jsonl/.json/.parquet/.csv files in '{path}'"
        )
    files = sorted(by_split[_choose_split(config, path, list(by_split))])
    if builder.config.name == "default":  # no README configs: every data file belongs to a split
        listed = {f.resolve() for split in by_split.values() for f in split}
        ignored = [f for f in path.rglob("*") if f.suffix in _LOADERS and f.resolve() not in listed]
        if ignored:
            suffixes = sorted({f.suffix for f in files} | {f.suffix for f in ignored})
            raise TasksetError(
                f"taskset '{config.name}': unsupported or mixed file types {suffixes} in '{path}'"
            )
    return files


def read_rows(
    config: TasksetConfig, base_dir: Path | None = None
) -> tuple[list[dict[str, Any]], list[str], list[InvalidRow]]:
    """The taskset's raw rows with where each came from, plus the rows that could not be parsed."""
    if config.reasoning_gym is not None:
        rows = _reasoning_gym_rows(config)
        return (
            rows,
            [f"reasoning-gym:{config.reasoning_gym.name}:row {i + 1}" for i in range(len(rows))],
            [],
        )
    path = resolve_path(config, base_dir)
    if path.is_dir() and (
        (path / "dataset_dict.json").is_file() or (path / "state.json").is_file()
    ):
        rows = _load_from_disk(config, path)
        return rows, [f"{path}:row {i + 1}" for i in range(len(rows))], []
    if path.is_dir():
        files = _split_files(config, path)
    elif config.subset_name is not None:
        raise TasksetError(
            f"taskset '{config.name}': subset_name applies to a dataset folder, not to {path}"
        )
    else:
        files = [path]
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
            good, where, bad = _scan_jsonl(config, f)
            rows.extend(good)
            origins.extend(where)
            invalid.extend(bad)
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


def resolve_path(config: TasksetConfig, base_dir: Path | None = None) -> Path:
    """The taskset's file or folder (a relative path is tried against ``base_dir`` too)."""
    path = Path(config.path or "").expanduser()
    if not path.is_absolute() and base_dir is not None and not path.exists():
        path = base_dir / path
    if not path.exists():
        raise TasksetError(f"taskset '{config.name}': path '{config.path}' does not exist")
    return path


def _reasoning_gym_rows(config: TasksetConfig) -> list[dict[str, Any]]:
    from reinforge.core.optional import MissingDependencyError, require

    try:
        reasoning_gym = require("reasoning_gym", "reasoning-gym", f"taskset '{config.name}'")
    except MissingDependencyError as exc:
        raise TasksetError(str(exc)) from None
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
    rollout = config.rollout_args.copy()  # the tasks' own: the config section stays as read
    rollout.n = config.repeat_times  # as each Task would set it (see Task): one config for all
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
            hint = (
                f"format.prompt_key='{fmt.prompt_key}', format.response_key="
                f"'{fmt.response_key}'; row keys: {sorted(row)}"
            )
            invalid.append(_invalid(config, i, origins[i], f"missing key(s) {missing}", hint))
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
                # taskset_id/index: the task's position, which Trinity's task selectors
                # and pass-rate operators read from each experience's info["task_index"]
                index={"taskset": config.name, "row": i, "taskset_id": 0, "index": len(tasks)},
            )
        )
    source = str(resolve_path(config, base_dir)) if config.path else "reasoning-gym"
    if not tasks:
        if not rows and not invalid:
            raise TasksetError(f"taskset '{config.name}': {source} has no rows")
        raise TasksetError(
            f"taskset '{config.name}': {source}: 0 usable tasks of {len(invalid)} row(s): "
            f"{_causes(invalid, source, 3, every=True)}"
        )
    return LoadedTaskset(config.name, tasks, invalid, source)
