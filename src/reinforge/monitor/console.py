"""Console reporting: live progress on a terminal, plain lines everywhere else.

On a terminal (and with ``monitor.progress`` on) a live display at the bottom
shows one overall bar, ``step N/total`` with elapsed time, ETA, rollouts/min and
the latest reward/accuracy/loss, and one line for the current phase (exploring
k/n tasks, evaluating a taskset, training, syncing). Finished steps, eval
passes, warnings, notes and Python log records are printed as complete lines
above it, through the same rich Console, so nothing is drawn into the bars.

Anywhere else (a log file, CI, nohup) or with ``monitor.progress: false``
there are no bars: the same lines are printed, one per event, never cut to
the console width.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from reinforge.explorer import Reporter, TaskResult
from reinforge.monitor.display import LiveDisplay
from reinforge.monitor.jsonl import JsonlMetrics
from reinforge.monitor.logs import LogRouting
from reinforge.monitor.samples import sample_completions
from reinforge.monitor.sinks import MetricSink, TensorBoardSink
from reinforge.monitor.status import RunStatus

_LINE_STYLES = {"eval": "green"}


def _rollouts(result: TaskResult) -> int:
    """Rollouts in a task result: distinct runs (a multi-step run has several experiences)."""
    try:
        return len({exp.eid.rid for exp in result.experiences})
    except AttributeError:
        return len(result.experiences)


class ConsoleReporter(Reporter):
    """Shows progress on the console and hands step metrics to the sinks (JSONL, TensorBoard, ...).

    ``progress``: draw live bars when the console is a terminal; otherwise (or when
    False) print plain lines only. ``samples_per_step``: completions per explore
    step given to sinks that show them (``log_samples``).
    """

    def __init__(
        self,
        jsonl: JsonlMetrics | None = None,
        progress: bool = True,
        console: Console | None = None,
        sinks: list[MetricSink] | None = None,
        samples_per_step: int = 4,
    ) -> None:
        self.console = console or Console(stderr=True)
        self.sinks: list[MetricSink] = ([jsonl] if jsonl is not None else []) + list(sinks or [])
        self.show_progress = progress
        self.live = progress and self.console.is_terminal and not self.console.is_dumb_terminal
        self.status = RunStatus()
        self.samples_per_step = samples_per_step
        self._display = LiveDisplay(self.console, self.status) if self.live else None
        self._log_routing = LogRouting(self.console)
        self.history: list[dict[str, Any]] = []

    # ---- display ---------------------------------------------------------------------

    def _show(self) -> None:
        """Start the live display (terminal only), routing logging above it."""
        if self._display is None or self._display.running:
            return
        self._log_routing.install()
        self._display.start()

    def _hide(self) -> None:
        if self._display is not None and self._display.running:
            self._display.stop()
        self._log_routing.restore()

    def _print(self, text: Text) -> None:
        # soft_wrap: no line breaks inserted and nothing cropped at the console width,
        # so a line in a log file is whole and greppable
        self.console.print(text, soft_wrap=True, highlight=False)

    # ---- Reporter --------------------------------------------------------------------

    def plan(self, total_steps: int | None, done: int = 0) -> None:
        self.status.plan(total_steps, done)

    def start(self, description: str, total_tasks: int) -> None:
        self.status.begin(description, total_tasks)
        self._show()

    def task_done(self, result: TaskResult) -> None:
        self.status.task_done(_rollouts(result))

    def phase(self, label: str, done: int | None = None, total: int | None = None) -> None:
        self.status.set_phase(label, done, total)
        self._show()

    def step_done(self, metrics: dict[str, Any]) -> None:
        self.history.append(metrics)
        for sink in self.sinks:
            sink.log(metrics)
        kind = self.status.step_done(metrics)
        if any(key != "step" for key in metrics):
            self._print(Text(self.status.line(metrics, kind), style=_LINE_STYLES.get(kind, "")))
        if self._display is not None:
            self._display.refresh()

    def samples(self, step: int, experiences: Sequence[Any]) -> None:
        takers = [s for s in self.sinks if callable(getattr(s, "log_samples", None))]
        if not takers or self.samples_per_step <= 0:
            return
        chosen = sample_completions(experiences, self.samples_per_step)
        for sink in takers:
            sink.log_samples(step, chosen)  # type: ignore[attr-defined]

    def warn(self, message: str) -> None:
        # Text, not markup: messages carry arbitrary text (workflow errors, paths)
        # that must not be read as rich markup ("[/tmp/x]" would raise)
        line = Text()
        line.append("warning:", style="yellow")
        line.append(f" {message}")
        self._print(line)

    def info(self, message: str) -> None:
        self._print(Text(message))

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
        """The phase is over: the live display goes (it returns with the next phase)."""
        self.status.idle()
        self._hide()

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
