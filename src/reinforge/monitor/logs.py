"""Send Python logging through a rich Console while a live display runs.

A ``logging.StreamHandler`` keeps the stream it was created with (``sys.stderr``
at ``logging.basicConfig`` time), so its lines would be written straight into
the live bars and garble them. While the display runs, ``LogRouting`` puts a
``ConsoleLogHandler`` (same level, formatter and filters) in the place of every
handler that writes to the process's stdout or stderr, on the root and the
``reinforge`` loggers; the Console then prints each record above the display.
Handlers writing anywhere else (files, pytest's capture) are left alone.
"""

from __future__ import annotations

import logging
import sys
from typing import IO, Any

from rich.console import Console
from rich.text import Text

_LEVEL_STYLES = {logging.WARNING: "yellow", logging.ERROR: "red", logging.CRITICAL: "bold red"}
ROUTED_LOGGERS = ("", "reinforge")  # the root logger and reinforge's own


class ConsoleLogHandler(logging.Handler):
    """Prints each record, formatted, as one line of plain text on a rich Console."""

    def __init__(self, console: Console, level: int = logging.NOTSET) -> None:
        super().__init__(level)
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = self.format(record)
            style = _LEVEL_STYLES.get(record.levelno, "")
            # Text, not markup: log messages carry brackets (paths, reprs) verbatim
            self.console.print(Text(message, style=style), soft_wrap=True, highlight=False)
        except Exception:
            self.handleError(record)


def _std_streams() -> list[IO[Any]]:
    return [s for s in (sys.stderr, sys.stdout, sys.__stderr__, sys.__stdout__) if s is not None]


def _writes_to_std(handler: logging.Handler, streams: list[IO[Any]]) -> bool:
    if type(handler) is not logging.StreamHandler:  # FileHandler and others are kept
        return False
    stream = getattr(handler, "stream", None)
    return any(stream is s for s in streams)


class LogRouting:
    """Swap stdout/stderr logging handlers for Console ones (``install``) and back (``restore``)."""

    def __init__(self, console: Console, loggers: tuple[str, ...] = ROUTED_LOGGERS) -> None:
        self.console = console
        self.loggers = loggers
        self._swapped: list[tuple[logging.Logger, logging.Handler, logging.Handler]] = []

    @property
    def installed(self) -> bool:
        return bool(self._swapped)

    def install(self) -> None:
        if self._swapped:
            return
        streams = _std_streams()
        for name in self.loggers:
            logger = logging.getLogger(name)
            for index, old in enumerate(list(logger.handlers)):
                if not _writes_to_std(old, streams):
                    continue
                new = ConsoleLogHandler(self.console, old.level)
                new.setFormatter(old.formatter)
                for flt in old.filters:
                    new.addFilter(flt)
                logger.handlers[index] = new
                self._swapped.append((logger, old, new))

    def restore(self) -> None:
        swapped, self._swapped = self._swapped, []
        for logger, old, new in swapped:
            if new in logger.handlers:
                logger.handlers[logger.handlers.index(new)] = old
