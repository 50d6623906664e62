"""Groups: the experiences and task records of one task in one step, and their filters.

A group joins what the buffer keeps in two tables: the stored experiences of a task
(none when it failed, or when all of them were masked) and its task records (the
status and error of each attempt's outcome). The step view lists groups and filters
them on group fields (taskset, status, masked) and on experience fields (reward
range, termination reason): a group filtered on the latter keeps only the
experiences that pass, and is left out when none do.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from reinforge.viewer.rows import finite

ERROR_PREVIEW_CHARS = 300


def sort_key(value: str) -> tuple[int, int, str]:
    """Numbers in numeric order first, then other names ("eval0", "gsm8k/3") alphabetically."""
    return (0, int(value), "") if value.isdigit() else (1, 0, value)


def first_line(text: str | None) -> str | None:
    """The first line of an error (its summary; the traceback follows it)."""
    if not text or not text.strip():
        return None
    return text.strip().splitlines()[0][:ERROR_PREVIEW_CHARS]


@dataclass
class Filters:
    """Step-view filters; None means "any"."""

    taskset: str | None = None
    reward_min: float | None = None
    reward_max: float | None = None
    status: str | None = None  # task status: ok, failed, timeout, invalid, masked
    termination: str | None = None  # info["termination_reason"]
    masked: bool | None = None

    def keeps_experience(self, row: dict[str, Any]) -> bool:
        reward = row["reward"]
        if self.reward_min is not None and (reward is None or reward < self.reward_min):
            return False
        if self.reward_max is not None and (reward is None or reward > self.reward_max):
            return False
        return self.termination is None or row["termination_reason"] == self.termination

    @property
    def on_experiences(self) -> bool:
        return (self.reward_min, self.reward_max, self.termination) != (None, None, None)

    def keeps_group(self, group: dict[str, Any], kept: list[dict[str, Any]]) -> bool:
        """``group`` as ``Group.to_json`` gives it; ``kept``: its experiences that pass."""
        if self.taskset is not None and group["taskset"] != self.taskset:
            return False
        if self.status is not None and self.status not in group["statuses"]:
            return False
        if self.masked is not None and group["masked"] != self.masked:
            return False
        return not (self.on_experiences and not kept)


@dataclass
class Group:
    """One task of one step, built from experience summaries and task records."""

    task: str
    taskset: str | None = None
    experiences: list[dict[str, Any]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    terminations: Counter[str] = field(default_factory=Counter)

    def to_json(self, experiences: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The group for the page, listing ``experiences`` (default: all of them)."""
        shown = self.experiences if experiences is None else experiences
        rewards = [row["reward"] for row in shown if row["reward"] is not None]
        # a buffer without task records (older runs) still has ok groups
        statuses = dict(self.statuses) or ({"ok": 1} if self.experiences else {})
        bad = [status for status in statuses if status != "ok"]
        return {
            "task": self.task,
            "taskset": self.taskset,
            "status": bad[0] if bad else "ok",
            "statuses": statuses,
            "terminations": dict(self.terminations),
            "masked": "masked" in statuses or any(row["masked"] for row in self.experiences),
            "count": len(shown),
            "total": len(self.experiences),
            "reward_mean": finite(sum(rewards) / len(rewards)) if rewards else None,
            "reward_min": min(rewards) if rewards else None,
            "reward_max": max(rewards) if rewards else None,
            "errors": sorted({r["error_line"] for r in self.records if r["error_line"]}),
            "records": self.records,
            "experiences": shown,
        }


def build_groups(
    experiences: Iterable[dict[str, Any]], records: Iterable[dict[str, Any]]
) -> dict[str, Group]:
    """Groups keyed by task id, in task order."""
    groups: dict[str, Group] = {}
    for row in experiences:
        group = groups.setdefault(row["task"], Group(row["task"]))
        group.experiences.append(row)
        group.taskset = group.taskset or row["taskset"]
        if row["termination_reason"]:
            group.terminations[row["termination_reason"]] += 1
    for record in records:
        task = str(record["task"])
        group = groups.setdefault(task, Group(task))
        group.records.append(record)
        group.statuses[record["status"]] += 1
        group.taskset = group.taskset or record["taskset"]
    return {task: groups[task] for task in sorted(groups, key=sort_key)}


def filter_groups(groups: dict[str, Group], filters: Filters) -> list[dict[str, Any]]:
    """The groups that pass ``filters``, each with only its experiences that pass."""
    out = []
    for group in groups.values():
        kept = [row for row in group.experiences if filters.keeps_experience(row)]
        summary = group.to_json(kept)
        if filters.keeps_group(summary, kept):
            out.append(summary)
    return out


def choices(groups: Iterable[Group]) -> dict[str, list[str]]:
    """The values the page offers in its filter menus."""
    every = list(groups)
    return {
        "tasksets": sorted({g.taskset for g in every if g.taskset}),
        "statuses": sorted({s for g in every for s in g.statuses} | {"ok"}),
        "terminations": sorted({t for g in every for t in g.terminations}),
    }
