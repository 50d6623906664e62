"""Experience identifiers: which batch, task, run (repeat) and step an experience came from."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field

# A private generator, seeded from the OS (again in a forked child, so that parent and
# child do not draw the same suffixes); a user's ``random.seed`` does not touch it.
_SUFFIX_RNG = random.Random()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_SUFFIX_RNG.seed)


def _new_suffix() -> str:
    """12 random hex digits (48 bits), like ``uuid.uuid4().hex[:12]``.

    Drawn from ``_SUFFIX_RNG`` rather than ``uuid4``: every experience gets one, and
    ``os.urandom`` behind ``uuid4`` is a system call that releases the GIL, so with
    many runner threads each new experience handed the GIL to another thread.
    """
    return f"{_SUFFIX_RNG.getrandbits(48):012x}"


@dataclass
class EID:
    """Hierarchical id ``batch/task/run/step/suffix``.

    ``tid`` (batch/task) identifies a group of rollouts of the same task, the unit
    that group-relative advantages such as GRPO normalise over; ``rid`` adds the
    run (one repeat of the task); ``sid`` adds the step inside a multi-step run;
    ``uid`` adds a random suffix and is unique per experience.
    """

    batch: int | str = ""
    task: int | str = ""
    run: int = 0
    step: int = 0
    suffix: str = field(default_factory=_new_suffix)

    @property
    def tid(self) -> str:
        return f"{self.batch}/{self.task}"

    @property
    def rid(self) -> str:
        return f"{self.tid}/{self.run}"

    @property
    def sid(self) -> str:
        return f"{self.rid}/{self.step}"

    @property
    def uid(self) -> str:
        return f"{self.sid}/{self.suffix}"

    def key(self, id_type: str) -> str:
        """The id of the given granularity: ``task``, ``run``, ``step`` or ``uid``."""
        try:
            return {"task": self.tid, "run": self.rid, "step": self.sid, "uid": self.uid}[id_type]
        except KeyError:
            raise ValueError(f"unknown id_type '{id_type}'; use task, run, step or uid") from None

    def to_str(self) -> str:
        """Compact text form; ``EID.from_str`` inverts it."""
        return self.uid

    @classmethod
    def from_str(cls, text: str) -> EID:
        """Inverse of ``to_str``; a task id may itself contain "/" (e.g. ``gsm8k/12``)."""
        parts = text.rsplit("/", 3)
        batch, sep, task = parts[0].partition("/")
        if len(parts) != 4 or not sep:
            raise ValueError(f"malformed EID '{text}': expected batch/task/run/step/suffix")
        _, run, step, suffix = parts
        return cls(
            batch=_maybe_int(batch),
            task=_maybe_int(task),
            run=int(run),
            step=int(step),
            suffix=suffix,
        )

    def __str__(self) -> str:
        return self.uid


def _maybe_int(value: str) -> int | str:
    """``"12"`` → 12; strings that an int would not print back as (``"007"``) stay strings."""
    try:
        number = int(value)
    except ValueError:
        return value
    return number if str(number) == value else value
