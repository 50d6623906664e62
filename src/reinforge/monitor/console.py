"""Rich console reporting: a progress bar per phase, warnings, and a summary table."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from reinforge.explorer import Reporter, TaskResult
from reinforge.monitor.jsonl import JsonlMetrics
from reinforge.monitor.sinks import MetricSink, TensorBoardSink

_SHOWN = ("reward_mean", "accuracy", "failed_tasks", "response_length", "loss")


class ConsoleReporter(Reporter):
    """Shows progress on the console and appends step metrics to a JSONL file."""

    def __init__(
        self,
        jsonl: JsonlMetrics | None = None,
        progress: bool = True,
        console: Console | None = None,
        sinks: list[MetricSink] | None = None,
    ) -> None:
        self.console = console or Console(stderr=True)
        self.sinks: list[MetricSink] = ([jsonl] if jsonl is not None else []) + list(sinks or [])
        self.show_progress = progress
        self._progress: Progress | None = None
        self._task_id: Any = None
        self._ok = 0
        self.history: list[dict[str, Any]] = []

    def start(self, description: str, total_tasks: int) -> None:
        if not self.show_progress:
            return
        if self._progress is None:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[status]}"),
                TimeElapsedColumn(),
                console=self.console,
                transient=False,
            )
            self._progress.start()
        self._ok = 0
        self._task_id = self._progress.add_task(description, total=total_tasks, status="")

    def task_done(self, result: TaskResult) -> None:
        self._ok += result.ok
        if self._progress is not None and self._task_id is not None:
            self._progress.update(self._task_id, advance=1, status=f"ok {self._ok}")

    def step_done(self, metrics: dict[str, Any]) -> None:
        self.history.append(metrics)
        for sink in self.sinks:
            sink.log(metrics)
        if self._progress is not None and self._task_id is not None:
            shown = [
                f"{k.rsplit('/', 1)[-1]}={v:.3g}"
                for k, v in metrics.items()
                if k.rsplit("/", 1)[-1] in _SHOWN
            ]
            self._progress.update(self._task_id, status=" ".join(shown))

    def warn(self, message: str) -> None:
        # escape: messages carry arbitrary text (workflow errors, paths) that must not be
        # read as rich markup ("[/tmp/x]" would raise); soft_wrap: no line breaks are
        # inserted into long messages, so paths stay greppable in logs
        self.console.print(
            f"[yellow]warning:[/yellow] {escape(message)}",
            markup=True,
            highlight=False,
            soft_wrap=True,
        )

    def info(self, message: str) -> None:
        self.console.print(escape(message), markup=False, highlight=False, soft_wrap=True)

    def rewind(self, explore_step: int, train_step: int) -> None:
        kept: list[dict[str, Any]] | None = None
        for sink in self.sinks:
            if isinstance(sink, JsonlMetrics):
                kept = sink.rewind(explore_step, train_step)
        for sink in self.sinks:
            if isinstance(sink, TensorBoardSink):  # replays what JSONL kept, if it is on
                sink.rewind(explore_step, train_step, kept)
            elif not isinstance(sink, JsonlMetrics) and hasattr(sink, "rewind"):
                sink.rewind(explore_step, train_step)

    def finish(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def close(self) -> None:
        self.finish()
        for sink in self.sinks:
            sink.close()

    def summary(self, title: str, rows: dict[str, Any]) -> None:
        table = Table(title=Text(title))
        table.add_column("metric")
        table.add_column("value", justify="right")
        for key, value in rows.items():  # Text: cells are data (paths, names), not markup
            shown = f"{value:.4g}" if isinstance(value, float) else str(value)
            table.add_row(Text(str(key)), Text(shown))
        Console().print(table)
