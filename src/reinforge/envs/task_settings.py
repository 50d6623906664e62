"""A task's environment settings, read from its row and ``workflow_args`` with their types.

Every environment's workflow takes its settings (map size, step limit, reward options,
...) from the task: the taskset row first, then ``workflow_args``. A row from a CSV file
or a ``--set`` override brings every value as a string, and a dataclass takes them as
they come: ``"false"`` is a non-empty string, so it reads as true. ``settings_from_task``
converts each known value to its declared type (pydantic's lax mode: ``"false"`` and
``"0"`` are False, ``"5"`` is 5) and refuses one that is not of it, naming the task,
the environment and the setting. Keys the settings do not declare are left alone: a
row carries other columns (the prompt, the answer) for other readers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from reinforge.core import Task

SettingsT = TypeVar("SettingsT")


def settings_from_task(
    cls: type[SettingsT], values: Mapping[str, Any], env: str, task: Task
) -> SettingsT:
    """``cls`` (a dataclass) from the declared keys of ``values``; ``None`` means unset.

    A path object given for a text setting is taken as its text. Raises ``ValueError``
    naming ``task``, ``env`` and each setting whose value is not of its type.
    """
    assert is_dataclass(cls), cls
    known = {f.name for f in fields(cls)}
    given = {
        key: os.fspath(value) if isinstance(value, os.PathLike) else value
        for key, value in values.items()
        if key in known and value is not None
    }
    try:
        return TypeAdapter(cls).validate_python(given)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in err['loc'])}: {err['msg']} (got {err['input']!r})"
            for err in exc.errors(include_url=False)
        )
        raise ValueError(
            f"task {task.task_id!r}: bad {env} setting (task row or workflow_args): {problems}"
        ) from None
