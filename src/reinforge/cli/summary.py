"""The few lines printed when ``explore``, ``eval`` or ``run`` finish.

They tell the story of the run rather than dump the last step's metrics: how long
it took, how many steps were explored and trained (and why any training step was
skipped), how much work the explorer did, how evaluation moved from its first to
its best and last value, where the results are, and which commands come next.

Everything here is computed from step metric rows (the dicts the reporter logs and
``metrics.jsonl`` holds), so it is pure and cheap to test.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.markup import escape

from reinforge.core import explore_metric_names as explore
from reinforge.core.metric_names import TRAIN_PREFIX, TRAIN_SKIPPED, TRAIN_STALE_DROPPED

Row = dict[str, Any]

_MEAN_AT = re.compile(re.escape(explore.MEAN_AT) + r"(\d+)$")


@dataclass
class RunSummary:
    """What the end-of-run summary shows.

    ``rows`` are the step metrics of this invocation; ``run_rows`` those of the whole
    run (``metrics.jsonl``, across resumes), used for the evaluation trend. ``places``
    are (label, path) pairs such as the checkpoint and plots folders; ``commands``
    are (label, command line) pairs for what to do next.
    """

    title: str
    wall_time: float
    rows: list[Row]
    run_rows: list[Row] | None = None
    places: list[tuple[str, str]] = field(default_factory=list)
    commands: list[tuple[str, str]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    eval_trend: bool = True


def format_duration(seconds: float) -> str:
    """``12.3 s``, ``9m 45s`` or ``2h 05m``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def _num(value: float) -> str:
    """A metric value: three decimals for the usual 0-1 scores, fewer digits otherwise."""
    return f"{value:.3f}" if abs(value) < 10 else f"{value:.4g}"


def _rate(count: float, seconds: float) -> str:
    per_minute = count * 60.0 / max(seconds, 1e-9)
    return f"{per_minute:,.0f}/min" if per_minute >= 10 else f"{per_minute:.1f}/min"


def _steps(steps: Sequence[int]) -> str:
    """Step numbers as ranges: ``1-14, 16`` (shortened past six ranges)."""
    ordered = sorted(set(steps))
    runs: list[tuple[int, int]] = []
    for step in ordered:
        if runs and step == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], step)
        else:
            runs.append((step, step))
    parts = [str(a) if a == b else f"{a}-{b}" for a, b in runs]
    if len(parts) > 6:
        return ", ".join(parts[:6]) + f", ... ({len(ordered)} in all)"
    return ", ".join(parts)


def _total(rows: Iterable[Row], key: str) -> float:
    return sum(float(r.get(key, 0) or 0) for r in rows)


def explore_rows(rows: Iterable[Row]) -> list[Row]:
    """The rows of explore steps (eval rows carry ``eval/...`` keys instead)."""
    return [r for r in rows if explore.EXPLORE_TASKS in r]


def train_rows(rows: Iterable[Row]) -> list[Row]:
    """The rows of training steps, trained or skipped."""
    return [r for r in rows if any(str(k).startswith(TRAIN_PREFIX) for k in r)]


def masked_reasons(rows: Iterable[Row]) -> dict[str, int]:
    """Masked experiences per reason (``explore/masked/REASON`` keys), summed."""
    out: dict[str, int] = {}
    for row in rows:
        for key, value in row.items():
            if str(key).startswith(explore.EXPLORE_MASKED_PREFIX):
                reason = str(key).removeprefix(explore.EXPLORE_MASKED_PREFIX)
                out[reason] = out.get(reason, 0) + int(value or 0)
    return {k: v for k, v in out.items() if v}


def skip_reason(explored: Row | None, trained: Row) -> str:
    """Why a training step had nothing to train on, as far as its metrics tell."""
    if explored is not None:
        tasks = int(explored.get(explore.EXPLORE_TASKS, 0) or 0)
        failed = int(explored.get(explore.EXPLORE_FAILED_TASKS, 0) or 0)
        exps = int(explored.get(explore.EXPLORE_EXPERIENCES, 0) or 0)
        masked = int(explored.get(explore.EXPLORE_MASKED_EXPERIENCES, 0) or 0)
        if tasks and failed == tasks:
            return "every task failed"
        if tasks and not exps:
            return "the workflows returned no experience"
        if masked and masked == exps:
            reasons = ", ".join(sorted(masked_reasons([explored]))) or "masked"
            return f"every experience was masked ({reasons})"
        if not explored.get(explore.EXPLORE_STORED, 1):
            droppers = sorted(
                str(k).removesuffix(explore.DROPPED_SUFFIX)
                for k, v in explored.items()
                if str(k).endswith(explore.DROPPED_SUFFIX) and v
            )
            if droppers:
                return f"the experience pipeline dropped everything ({', '.join(droppers)})"
            return "no experience was stored"
    if trained.get(TRAIN_STALE_DROPPED):
        return "every experience was too stale (trainer.max_staleness)"
    return "no usable experience (e.g. empty responses)"


def explore_line(rows: Sequence[Row], wall_time: float) -> str | None:
    """Steps explored, tasks, rollouts and their rate, failures and masking."""
    explored = explore_rows(rows)
    if not explored:
        return None
    steps = [int(r.get("step", 0)) for r in explored]
    rollouts = _total(explored, explore.EXPLORE_EXPERIENCES)
    stored = _total(explored, explore.EXPLORE_STORED)
    tasks = _total(explored, explore.EXPLORE_TASKS)
    # the rate while exploring: start-up, training and evaluation are not in it
    busy = _total(explored, explore.EXPLORE_STEP_TIME) or wall_time
    text = (
        f"{len(steps)} step{'s' if len(steps) != 1 else ''} ({_steps(steps)}), "
        f"{tasks:.0f} tasks, {rollouts:.0f} rollouts ({_rate(rollouts, busy)}), "
        f"{stored:.0f} experiences stored"
    )
    failed = _total(explored, explore.EXPLORE_FAILED_TASKS)
    if failed:
        text += f"; {failed:.0f} tasks failed (see the warnings above)"
    masked = _total(explored, explore.EXPLORE_MASKED_EXPERIENCES)
    if masked:
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(masked_reasons(explored).items()))
        text += f"; {masked:.0f} experiences masked" + (f" ({reasons})" if reasons else "")
    empty = [int(r.get("step", 0)) for r in explored if not r.get(explore.EXPLORE_STORED, 1)]
    if empty:
        text += f"; nothing stored at step {_steps(empty)}"
    return text


def score_line(rows: Sequence[Row]) -> tuple[str, str] | None:
    """(label, text): the explore accuracy (or reward) over all steps, first to last."""
    explored = explore_rows(rows)
    for metric in (explore.ACCURACY, explore.REWARD_MEAN):
        key = explore.explore_metric(metric)
        points = [
            (
                int(r.get("step", 0)),
                float(r[key]),
                float(r.get(explore.EXPLORE_EXPERIENCES, 1) or 1),
            )
            for r in explored
            if isinstance(r.get(key), int | float)
        ]
        if not points:
            continue
        weight = sum(w for _, _, w in points)
        overall = sum(v * w for _, v, w in points) / weight
        label = "accuracy" if metric == explore.ACCURACY else "reward"
        text = _num(overall)
        if len(points) > 1:
            (s0, v0, _), (s1, v1, _) = points[0], points[-1]
            text += f" over {len(points)} steps (step {s0}: {_num(v0)} → step {s1}: {_num(v1)})"
        return label, text
    return None


def train_line(rows: Sequence[Row], context: Sequence[Row] | None = None) -> str | None:
    """Steps trained, and the skipped ones grouped by reason. ``context`` (the run's
    rows) is searched for the explore row of a skipped step as well as ``rows``."""
    trained = train_rows(rows)
    if not trained:
        return None
    by_step: dict[int, Row] = {}
    for row in explore_rows([*(context or []), *rows]):
        by_step[int(row.get("step", 0))] = row
    done = [int(r.get("step", 0)) for r in trained if not r.get(TRAIN_SKIPPED)]
    skipped: dict[str, list[int]] = {}
    for row in trained:
        if row.get(TRAIN_SKIPPED):
            step = int(row.get("step", 0))
            skipped.setdefault(skip_reason(by_step.get(step), row), []).append(step)
    text = f"{len(done)} step{'s' if len(done) != 1 else ''}"
    if done:
        text += f" ({_steps(done)})"
    for reason, steps in skipped.items():
        text += f"; {len(steps)} skipped (step {_steps(steps)}: {reason})"
    return text


def eval_series(rows: Iterable[Row]) -> dict[str, tuple[str, list[tuple[int, Row]]]]:
    """Per eval taskset: its headline metric key and the (step, row) of each evaluation.

    The headline is ``mean@N`` (the largest N), else ``accuracy``, else ``reward_mean``.
    """
    per_taskset: dict[str, list[tuple[int, Row]]] = {}
    for row in rows:
        for key in row:
            key = str(key)
            if (name := explore.eval_taskset_of(key)) is not None:
                per_taskset.setdefault(name, []).append((int(row.get("step", 0)), row))
    out: dict[str, tuple[str, list[tuple[int, Row]]]] = {}
    for name, points in per_taskset.items():
        prefix = explore.eval_prefix(name)
        keys = {str(k) for _, r in points for k in r if str(k).startswith(prefix)}
        means = sorted(
            (int(m.group(1)), k)
            for k in keys
            if (m := _MEAN_AT.match(k.removeprefix(prefix))) and "/" not in k.removeprefix(prefix)
        )
        if means:
            headline = means[-1][1]
        elif prefix + explore.ACCURACY in keys:
            headline = prefix + explore.ACCURACY
        elif prefix + explore.REWARD_MEAN in keys:
            headline = prefix + explore.REWARD_MEAN
        else:
            continue
        out[name] = (
            headline,
            [(s, r) for s, r in points if isinstance(r.get(headline), int | float)],
        )
    return out


def _trend(points: list[tuple[int, float]]) -> str:
    """``first (step a) → best (step b) → last (step c)``, merged where they coincide."""
    if len(points) == 1:
        step, value = points[0]
        return f"{_num(value)} (step {step})"
    best = max(range(len(points)), key=lambda i: (points[i][1], i))
    last = len(points) - 1
    parts = []
    for i, tag in ((0, "first"), (best, "best"), (last, "last")):
        if parts and i == parts[-1][0]:
            continue
        parts.append((i, tag))
    shown = []
    for i, tag in parts:
        step, value = points[i]
        notes = [f"step {step}"] + (["best"] if i == best and tag != "best" else [])
        prefix = "best " if tag == "best" else ""
        shown.append(f"{prefix}{_num(value)} ({', '.join(notes)})")
    return " → ".join(shown)


def _spread(row: Row, prefix: str) -> str:
    """`` (std@n, best@k, worst@k)`` of an eval row, k the largest it has ("" if none)."""
    found: dict[str, tuple[int, float]] = {}
    for key, value in row.items():
        match = re.fullmatch(r"(std|best|worst)@(\d+)", str(key).removeprefix(prefix))
        if str(key).startswith(prefix) and match and isinstance(value, int | float):
            k = int(match.group(2))
            if match.group(1) not in found or k > found[match.group(1)][0]:
                found[match.group(1)] = (k, float(value))
    shown = [f"{name}@{k} {_num(v)}" for name, (k, v) in found.items()]
    return f" ({', '.join(shown)})" if shown else ""


def eval_lines(rows: Sequence[Row], trend: bool = True) -> list[str]:
    """One line per eval taskset, starting ``eval/NAME/METRIC:``.

    ``trend``: first → best → last over the evaluations in ``rows``; otherwise the
    last evaluation with its spread (std, best@k, worst@k) and task counts.
    """
    lines = []
    for name, (headline, points) in eval_series(rows).items():
        if not points:
            continue
        prefix = explore.eval_prefix(name)
        step, last = points[-1]
        if trend:
            text = _trend([(s, float(r[headline])) for s, r in points])
        else:
            text = _num(float(last[headline])) + _spread(last, prefix)
        tasks = int(last.get(prefix + explore.TASKS, 0) or 0)
        failed = int(last.get(prefix + explore.FAILED_TASKS, 0) or 0)
        if not trend:
            text += f"; {tasks} tasks" + (f", {failed} failed" if failed else "")
        elif failed:
            text += f"; {failed} of {tasks} tasks failed at step {step}"
        lines.append(f"{headline}: {text}")
    return lines


def summary_lines(summary: RunSummary) -> list[tuple[str, str]]:
    """The summary as (label, text) pairs; an empty label marks a line of its own."""
    rows = summary.rows
    out: list[tuple[str, str]] = []
    explored = explore_line(rows, summary.wall_time)
    if explored:
        out.append(("explored", explored))
    score = score_line(rows)
    if score:
        out.append(score)
    trained = train_line(rows, summary.run_rows)
    if trained:
        out.append(("trained", trained))
    out.extend(summary.notes)
    evals = summary.run_rows if summary.run_rows is not None else rows
    out.extend(("", line) for line in eval_lines(evals, trend=summary.eval_trend))
    out.extend(summary.places)
    return out


def print_summary(summary: RunSummary, console: Console | None = None) -> None:
    """Print the summary to stdout (or ``console``): a title, the facts, the next commands."""
    console = console or Console(soft_wrap=True, highlight=False)
    console.print(
        f"[bold]{escape(summary.title)}[/bold] finished in {format_duration(summary.wall_time)}"
    )
    facts = summary_lines(summary)
    width = max((len(label) for label, _ in facts if label), default=0) + 1
    for label, text in facts:
        if label:
            console.print(f"  [bold]{escape(label + ':'):<{width}}[/bold] {escape(text)}")
        else:
            console.print(f"  {escape(text)}")
    if summary.commands:
        console.print("[bold]next:[/bold]")
        width = max(len(label) for label, _ in summary.commands) + 1
        for label, command in summary.commands:
            console.print(f"  {escape(label + ':'):<{width}} {escape(command)}")
