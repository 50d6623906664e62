"""What the console shows about a run, kept apart from how it is drawn.

``RunStatus`` follows the reporter's events (steps planned and finished, the
current phase, rollouts sampled, the latest metrics) and turns them into text:
the headline numbers of the progress bar and one complete line per finished
step or eval pass. The rich display (``display.py``) and the plain line output
of non-terminal runs both read it, so a terminal and a log file say the same.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reinforge.core import explore_metric_names as explore
from reinforge.core.metric_names import (
    ENTROPY_VALUE,
    KL_LOSS_VALUE,
    POLICY_LOSS,
    SFT_LOSS,
    TRAIN_EXPERIENCES,
    TRAIN_GRAD_NORM,
    TRAIN_LOSS,
    TRAIN_PREFIX,
    TRAIN_SKIPPED,
    TRAIN_STEP_TIME,
    TRAIN_SYNC_TIME,
    train_metric,
)

# (label, metric) pairs shown for each kind of row, in this order, when present
EXPLORE_FIELDS: tuple[tuple[str, str], ...] = (
    ("reward", explore.EXPLORE_REWARD_MEAN),
    ("accuracy", explore.EXPLORE_ACCURACY),
    ("tasks", explore.EXPLORE_TASKS),
    ("failed", explore.EXPLORE_FAILED_TASKS),
    ("experiences", explore.EXPLORE_EXPERIENCES),
    ("masked", explore.EXPLORE_MASKED_EXPERIENCES),
    ("stored", explore.EXPLORE_STORED),
    ("response_length", explore.EXPLORE_RESPONSE_LENGTH),
)
TRAIN_FIELDS: tuple[tuple[str, str], ...] = (
    ("loss", TRAIN_LOSS),
    ("policy_loss", train_metric(POLICY_LOSS)),
    ("sft_loss", train_metric(SFT_LOSS)),
    ("kl_loss", train_metric(KL_LOSS_VALUE)),
    ("entropy", train_metric(ENTROPY_VALUE)),
    ("grad_norm", TRAIN_GRAD_NORM),
    ("experiences", TRAIN_EXPERIENCES),
)
# the latest value of each is kept on the progress bar, whichever row brought it
HEADLINE_FIELDS: tuple[tuple[str, str], ...] = (
    ("reward", explore.EXPLORE_REWARD_MEAN),
    ("accuracy", explore.EXPLORE_ACCURACY),
    ("loss", TRAIN_LOSS),
)
_EVAL_ORDER = (explore.MEAN_AT, explore.STD_AT, explore.BEST_AT, explore.WORST_AT)
_STEP_DESCRIPTION = re.compile(r"^step (\d+)\s*(.*)$")


def fmt_number(value: Any) -> str:
    """A metric value, short: 4 significant digits for floats, integers as integers."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e9:
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def fmt_duration(seconds: float) -> str:
    """``H:MM:SS`` (``M:SS`` under an hour)."""
    whole = max(round(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def row_kind(metrics: dict[str, Any]) -> str:
    """``explore``, ``train``, ``eval`` or ``other``: which part of a run logged a row."""
    keys = [k for k in metrics if k != "step"]
    for kind, prefix in (
        ("explore", explore.EXPLORE_PREFIX),
        ("train", TRAIN_PREFIX),
        ("eval", explore.EVAL_PREFIX),
    ):
        if any(k.startswith(prefix) for k in keys):
            return kind
    return "other"


def eval_taskset(metrics: dict[str, Any]) -> str:
    """The eval taskset an eval row belongs to (its keys are ``eval/NAME/...``)."""
    for key in metrics:
        if (name := explore.eval_taskset_of(key)) is not None:
            return name
    key = next(k for k in metrics if k.startswith(explore.EVAL_PREFIX))
    return key.split("/")[1]


_ONLY_IF_NONZERO = {explore.EXPLORE_MASKED_EXPERIENCES}  # rare; a 0 on every line is noise


def _pairs(metrics: dict[str, Any], fields: tuple[tuple[str, str], ...]) -> list[str]:
    return [
        f"{label}={fmt_number(metrics[key])}"
        for label, key in fields
        if key in metrics and (metrics[key] or key not in _ONLY_IF_NONZERO)
    ]


def eval_pairs(metrics: dict[str, Any], name: str) -> list[str]:
    """``mean@n=.. std@n=.. best@k=.. worst@k=..`` (largest k), then accuracy, reward, failed."""
    prefix = explore.eval_prefix(name)
    own = {k[len(prefix) :]: v for k, v in metrics.items() if k.startswith(prefix)}
    pairs: list[str] = []
    for head in _EVAL_ORDER:
        ks = [k for k in own if k.startswith(head) and k[len(head) :].isdigit()]
        if ks:
            key = max(ks, key=lambda k: int(k[len(head) :]))
            pairs.append(f"{key}={fmt_number(own[key])}")
    for label, key in (("accuracy", explore.ACCURACY), ("reward", explore.REWARD_MEAN)):
        if key in own:
            pairs.append(f"{label}={fmt_number(own[key])}")
    for label, key in (("tasks", explore.TASKS), ("failed", explore.FAILED_TASKS)):
        if key in own:
            pairs.append(f"{label}={fmt_number(own[key])}")
    return pairs


@dataclass
class Phase:
    """What the run does right now: a label and, when countable, k of n parts."""

    label: str = ""
    done: int | None = None
    total: int | None = None
    unit: str = ""
    started: float = 0.0  # clock time the phase began

    def text(self) -> str:
        if self.total is None or self.done is None:
            return self.label
        unit = f" {self.unit}" if self.unit else ""
        return f"{self.label} {self.done}/{self.total}{unit}"


class RunStatus:
    """The state of a run as its reporter sees it; safe to read from a refresh thread."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.started = clock()
        self.total: int | None = None
        self.done_before = 0  # steps finished by an earlier invocation (resume)
        self.explored = 0
        self.trained = 0
        self.seen_step = 0  # the highest step number any event named
        self.rollouts = 0
        self.phase = Phase()
        self.latest: dict[str, Any] = {}  # headline metric -> its latest value
        self.latest_eval: dict[str, str] = {}  # eval taskset -> "mean@4=0.46"
        self._finished_here = 0

    # ---- events ----------------------------------------------------------------------

    def plan(self, total: int | None, done: int = 0) -> None:
        with self._lock:
            self.total = total
            self.done_before = max(done, 0)
            self.seen_step = max(self.seen_step, done)
            self.started = self._clock()
            self._finished_here = 0

    def begin(self, description: str, total_tasks: int) -> None:
        """The explorer starts an explore step (``step N ...``) or an eval pass (``eval NAME``)."""
        with self._lock:
            found = _STEP_DESCRIPTION.match(description)
            if found:
                self.seen_step = max(self.seen_step, int(found.group(1)))
                extra = f" {found.group(2)}" if found.group(2) else ""
                self.phase = Phase(f"exploring{extra}", 0, total_tasks, "tasks", self._clock())
            elif description.startswith("eval "):
                name = description[len("eval ") :]
                self.phase = Phase(f"evaluating {name}", 0, total_tasks, "tasks", self._clock())
            else:
                self.phase = Phase(description, 0, total_tasks, "tasks", self._clock())

    def task_done(self, rollouts: int) -> None:
        with self._lock:
            self.rollouts += rollouts
            if self.phase.done is not None:
                self.phase.done += 1

    def set_phase(self, label: str, done: int | None, total: int | None) -> None:
        with self._lock:
            found = re.search(r"\bstep (\d+)\b", label)
            if found:
                self.seen_step = max(self.seen_step, int(found.group(1)))
            same = label == self.phase.label  # k/n updates of one phase keep its start
            self.phase = Phase(
                label, done, total, "", self.phase.started if same else self._clock()
            )

    def idle(self) -> None:
        with self._lock:
            self.phase = Phase()

    def step_done(self, metrics: dict[str, Any]) -> str:
        """Take a finished row into account; returns its kind (see ``row_kind``)."""
        kind = row_kind(metrics)
        step = int(metrics.get("step", 0))
        with self._lock:
            for label, key in HEADLINE_FIELDS:
                if key in metrics:
                    self.latest[label] = metrics[key]
            before = self.completed
            if kind == "explore":
                self.explored = max(self.explored, step)
            elif kind == "train":
                self.trained = max(self.trained, step)
            elif kind == "eval":
                pairs = eval_pairs(metrics, eval_taskset(metrics))
                if pairs:
                    self.latest_eval[eval_taskset(metrics)] = pairs[0]
            if kind in ("explore", "train"):
                self.seen_step = max(self.seen_step, step)
            self._finished_here += max(self.completed - before, 0)
        return kind

    # ---- derived ---------------------------------------------------------------------

    @property
    def completed(self) -> int:
        """Steps finished: explored ones, or trained ones in a process that only trains."""
        counted = self.explored if self.explored else self.trained
        return max(counted, self.done_before)

    @property
    def current(self) -> int:
        """The step being worked on: the highest one an event named (an explore step
        starting, a training step, a finished row), or the last one completed."""
        return max(self.seen_step, self.completed)

    @property
    def elapsed(self) -> float:
        return self._clock() - self.started

    @property
    def phase_elapsed(self) -> float:
        return self._clock() - self.phase.started if self.phase.label else 0.0

    def eta(self) -> float | None:
        """Seconds left, from this invocation's pace; None until a step finished here."""
        if self.total is None or self._finished_here <= 0:
            return None
        left = max(self.total - self.completed, 0)
        return self.elapsed / self._finished_here * left

    def rollouts_per_min(self) -> float | None:
        minutes = self.elapsed / 60.0
        return self.rollouts / minutes if self.rollouts and minutes > 0 else None

    # ---- text ------------------------------------------------------------------------

    def step_label(self, step: int | None = None) -> str:
        step = self.current if step is None else step
        return f"step {step}/{self.total}" if self.total is not None else f"step {step}"

    def headline(self) -> str:
        """The latest reward, accuracy and loss (each once) and eval score per taskset."""
        with self._lock:
            pairs = [
                f"{label}={fmt_number(self.latest[label])}"
                for label, _ in HEADLINE_FIELDS
                if label in self.latest
            ]
            pairs += [f"eval {name} {score}" for name, score in self.latest_eval.items()]
        return " ".join(pairs)

    def pace(self) -> str:
        """``elapsed 1:32, ETA 6:10, 41.7 rollouts/min`` (the parts that are known)."""
        parts = [f"elapsed {fmt_duration(self.elapsed)}"]
        eta = self.eta()
        if eta is not None:
            parts.append(f"ETA {fmt_duration(eta)}")
        rate = self.rollouts_per_min()
        if rate is not None:
            parts.append(f"{rate:.1f} rollouts/min")
        return ", ".join(parts)

    def line(self, metrics: dict[str, Any], kind: str) -> str:
        """One complete line for a finished row (explore step, training step, eval pass)."""
        step = int(metrics.get("step", 0))
        if kind == "eval":
            name = eval_taskset(metrics)
            return f"eval {name} at step {step}: " + " ".join(eval_pairs(metrics, name))
        if kind == "explore":
            pairs = _pairs(metrics, EXPLORE_FIELDS)
            seconds = metrics.get(explore.EXPLORE_STEP_TIME)
            head = "explored"
        elif kind == "train":
            if metrics.get(TRAIN_SKIPPED):
                return f"{self.step_label(step)} trained: skipped (no usable experiences)"
            pairs = _pairs(metrics, TRAIN_FIELDS)
            seconds = metrics.get(TRAIN_STEP_TIME)
            if TRAIN_SYNC_TIME in metrics:
                pairs.append(f"sync={float(metrics[TRAIN_SYNC_TIME]):.1f}s")
            head = "trained"
        else:
            shown = {k: v for k, v in metrics.items() if k != "step"}
            return f"step {step}: " + " ".join(f"{k}={fmt_number(v)}" for k, v in shown.items())
        if isinstance(seconds, int | float):
            pairs.append(f"time={float(seconds):.1f}s")
        line = f"{self.step_label(step)} {head}: {' '.join(pairs)}"
        # the pace goes with the rows that count as progress (explore steps, or
        # training steps in a process that only trains), not twice per step
        if kind == "explore" or not self.explored:
            line += f" [{self.pace()}]"
        return line
