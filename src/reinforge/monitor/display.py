"""The live terminal display: one overall step bar and one line for the current phase.

Drawn afresh from a ``RunStatus`` at every refresh, so it never grows: finished
steps do not stay behind as bars of their own (the reporter prints one line per
finished step above it instead), and the current step is always in view.
"""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from reinforge.monitor.status import RunStatus, fmt_duration


class StatusView:
    """A rich renderable of a ``RunStatus``: ``step N/total [bar] times rate metrics``
    and, under it, the phase (``exploring 5/8 tasks``, ``training step 3``, ...)."""

    def __init__(self, status: RunStatus) -> None:
        self.status = status

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # two grids, not one: the step bar keeps its place whatever the phase is called
        yield self._overall()
        phase = self._phase()
        if phase is not None:
            yield phase

    def _overall(self) -> Table:
        status = self.status
        grid = Table.grid(padding=(0, 1))
        for _ in range(3):
            grid.add_column(no_wrap=True)
        grid.add_column(no_wrap=True, overflow="ellipsis")
        times = fmt_duration(status.elapsed)
        eta = status.eta()
        times += f" ETA {fmt_duration(eta)}" if eta is not None else " ETA -"
        rate = status.rollouts_per_min()
        if rate is not None:
            times += f" {rate:.1f} rollouts/min"
        total = status.total
        grid.add_row(
            Text(status.step_label(), style="bold"),
            ProgressBar(
                total=float(total) if total else None, completed=status.completed, width=30
            ),
            Text(times, style="cyan"),
            Text(status.headline()),
        )
        return grid

    def _phase(self) -> Table | None:
        phase = self.status.phase
        if not phase.label:
            return None
        grid = Table.grid(padding=(0, 1))
        for _ in range(3):
            grid.add_column(no_wrap=True)
        counted = phase.total is not None and phase.done is not None
        count = f"{phase.done}/{phase.total} {phase.unit}".rstrip() if counted else ""
        grid.add_row(
            Text(f"  {phase.label}", style="dim"),
            ProgressBar(  # no total: a pulse, the work goes on
                total=float(phase.total) if counted and phase.total else None,
                completed=phase.done or 0,
                width=30,
            ),
            Text(f"{count} {fmt_duration(self.status.phase_elapsed)}".strip(), style="dim"),
        )
        return grid


class LiveDisplay:
    """Starts and stops a transient ``rich.live.Live`` of a ``StatusView`` on ``console``.

    Transient: the bars vanish when the display stops, leaving only the printed lines.
    """

    def __init__(self, console: Console, status: RunStatus, refresh_per_second: float = 4) -> None:
        self.console = console
        self.view = StatusView(status)
        self._refresh_per_second = refresh_per_second
        self._live: Live | None = None

    @property
    def running(self) -> bool:
        return self._live is not None

    def start(self) -> None:
        if self._live is None:
            self._live = Live(
                self.view,
                console=self.console,
                refresh_per_second=self._refresh_per_second,
                transient=True,
                redirect_stdout=True,
                redirect_stderr=True,
            )
            self._live.start()

    def refresh(self) -> None:
        if self._live is not None:
            self._live.refresh()

    def stop(self) -> None:
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()
