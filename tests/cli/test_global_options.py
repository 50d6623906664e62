"""Global options: --version, -v/-q/--log-level, and how usage mistakes are reported."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from importlib import metadata

import pytest
from typer.testing import CliRunner

from reinforge.cli.main import app, log_level, package_version


@pytest.fixture
def reinforge_logger() -> Iterator[logging.Logger]:
    """The ``reinforge`` logger, its level put back after the test."""
    logger = logging.getLogger("reinforge")
    before = logger.level
    yield logger
    logger.setLevel(before)


def test_version_is_the_package_metadata() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"reinforge {metadata.version('reinforge')}"
    assert package_version() == metadata.version("reinforge")


@pytest.mark.parametrize(
    ("verbose", "quiet", "level", "expected"),
    [
        (0, False, None, None),
        (1, False, None, logging.INFO),
        (2, False, None, logging.DEBUG),
        (3, False, None, logging.DEBUG),
        (0, True, None, logging.ERROR),
        (0, False, "debug", logging.DEBUG),
        (2, False, "WARNING", logging.WARNING),  # --log-level wins over -v
    ],
)
def test_log_level_from_the_options(
    verbose: int, quiet: bool, level: str | None, expected: int | None
) -> None:
    assert log_level(verbose, quiet, level) == expected


@pytest.mark.parametrize(
    ("args", "level"),
    [(["-v"], logging.INFO), (["-vv"], logging.DEBUG), (["-q"], logging.ERROR)],
)
def test_options_set_the_reinforge_logger(
    reinforge_logger: logging.Logger, args: list[str], level: int
) -> None:
    result = CliRunner().invoke(app, [*args, "config", "--schema"])
    assert result.exit_code == 0, result.output
    assert reinforge_logger.level == level


def test_log_level_option_and_child_loggers(reinforge_logger: logging.Logger) -> None:
    result = CliRunner().invoke(app, ["--log-level", "info", "config", "--schema"])
    assert result.exit_code == 0, result.output
    assert reinforge_logger.level == logging.INFO
    assert logging.getLogger("reinforge.trainer.checkpoint").isEnabledFor(logging.INFO)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--log-level", "LOUD"], "--log-level must be one of"),
        (["-v", "-q"], "contradict"),
    ],
)
def test_bad_logging_options_are_one_line_and_exit_2(
    reinforge_logger: logging.Logger, args: list[str], said: str
) -> None:
    result = CliRunner().invoke(app, [*args, "config", "--schema"])
    assert result.exit_code == 2
    assert said in result.output and result.output.count("error:") == 1
