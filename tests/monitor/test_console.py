"""ConsoleReporter: live bars on a terminal, complete plain lines elsewhere, logging above the bars."""

from __future__ import annotations

import io
import logging
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from rich.console import Console

from reinforge.core import EID, Experience
from reinforge.explorer.messages import TaskResult
from reinforge.monitor import ConsoleReporter

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
LONG_WARNING = "task 7 failed: cannot open [/data/shard-0001.jsonl] " + "x" * 120


def _result(step: int, task: int, runs: int = 4) -> TaskResult:
    exps = [
        Experience(tokens=[1, 2, 3], prompt_length=1, reward=1.0, eid=EID(step, task, run))
        for run in range(runs)
    ]
    return TaskResult("train", str(step), str(task), "completed", exps)


def _explore(step: int) -> dict[str, float]:
    return {
        "step": step,
        "explore/reward_mean": 0.25 * step,
        "explore/accuracy": 0.125 * step,
        "explore/tasks": 2.0,
        "explore/failed_tasks": 0.0,
        "explore/experiences": 8.0,
        "explore/step_time": 1.25,
    }


def _train(step: int) -> dict[str, float]:
    return {
        "step": step,
        "train/loss": 0.242,
        "train/policy/loss": 0.2,
        "train/kl_loss/value": 0.01,
        "train/grad_norm": 1.5,
        "train/step_time": 0.5,
    }


EVAL = {
    "step": 2,
    "eval/test/tasks": 3.0,
    "eval/test/failed_tasks": 0.0,
    "eval/test/mean@4": 0.5,
    "eval/test/std@4": 0.1,
    "eval/test/best@2": 0.6,
    "eval/test/best@4": 0.75,
    "eval/test/worst@4": 0.25,
}


def _drive(reporter: ConsoleReporter, steps: int = 2) -> None:
    """What ``reinforge run`` (mode both) reports for ``steps`` steps of 3, then an eval."""
    reporter.plan(3, 0)
    for step in range(1, steps + 1):
        reporter.start(f"step {step} (epoch 1)", 2)
        reporter.task_done(_result(step, 0))
        reporter.task_done(_result(step, 1))
        reporter.step_done(_explore(step))
        reporter.phase(f"training step {step}")
        reporter.step_done(_train(step))
    reporter.warn(LONG_WARNING)
    reporter.start("eval test", 3)
    reporter.step_done(EVAL)
    reporter.finish()


def _plain_console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=80, force_terminal=False), out


def _terminal_console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=160, force_terminal=True, color_system=None), out


def _loss_count(text: str) -> int:
    return len(re.findall(r"\bloss=", text))  # policy_loss= does not count


# ---- not a terminal -------------------------------------------------------------------


def test_plain_mode_prints_one_complete_line_per_event_and_no_bars() -> None:
    console, out = _plain_console()
    reporter = ConsoleReporter(console=console)
    assert not reporter.live
    _drive(reporter)
    text = out.getvalue()
    lines = text.splitlines()
    assert ANSI.search(text) is None and "━" not in text
    assert len(lines) == 6  # 2 explored, 2 trained, 1 warning, 1 eval
    explored = [line for line in lines if " explored: " in line]
    assert explored[0].startswith("step 1/3 explored: reward=0.25 accuracy=0.125 tasks=2")
    assert "time=1.2s" in explored[0] and "elapsed " in explored[0]
    assert "rollouts/min" in explored[0]
    assert explored[1].startswith("step 2/3 explored: reward=0.5")
    assert "ETA " in explored[1]  # a step finished: the pace is known
    trained = [line for line in lines if " trained: " in line]
    assert trained[0].startswith("step 1/3 trained: loss=0.242 policy_loss=0.2 kl_loss=0.01")
    assert all(_loss_count(line) == 1 for line in trained)
    assert f"warning: {LONG_WARNING}" in lines  # whole, on one line, brackets verbatim
    assert lines[-1] == (
        "eval test at step 2: mean@4=0.5 std@4=0.1 best@4=0.75 worst@4=0.25 tasks=3 failed=0"
    )
    assert max(len(line) for line in lines) > 80  # nothing was cut at the console width


def test_progress_off_prints_plain_lines_even_on_a_terminal() -> None:
    console, out = _terminal_console()
    reporter = ConsoleReporter(console=console, progress=False)
    assert not reporter.live
    _drive(reporter, steps=1)
    assert "━" not in out.getvalue()
    assert "step 1/3 explored: reward=0.25" in out.getvalue()


def test_plain_mode_without_a_plan_names_the_step_alone() -> None:
    """``reinforge explore``/``eval`` do not say how many steps there are."""
    console, out = _plain_console()
    reporter = ConsoleReporter(console=console)
    reporter.start("step 4 (epoch 2)", 1)
    reporter.step_done(_explore(4))
    assert out.getvalue().startswith("step 4 explored: reward=1 ")
    assert "ETA" not in out.getvalue()


def test_a_skipped_training_step_says_so() -> None:
    console, out = _plain_console()
    reporter = ConsoleReporter(console=console)
    reporter.plan(2)
    reporter.step_done({"step": 1, "train/skipped": 1.0, "train/stale_dropped": 0.0})
    assert out.getvalue().startswith("step 1/2 trained: skipped (no usable experiences)")


# ---- a terminal -----------------------------------------------------------------------


def _view(reporter: ConsoleReporter) -> str:
    """What the live display shows now, as plain text."""
    assert reporter._display is not None
    out = io.StringIO()
    Console(file=out, width=200, force_terminal=False).print(reporter._display.view)
    return out.getvalue()


def test_terminal_bar_keeps_reward_after_training_and_shows_loss_once() -> None:
    console, out = _terminal_console()
    reporter = ConsoleReporter(console=console)
    assert reporter.live
    reporter.plan(3, 0)
    reporter.start("step 1 (epoch 1)", 2)
    reporter.task_done(_result(1, 0))
    shown = _view(reporter)
    assert shown.startswith("step 1/3")
    assert "exploring (epoch 1)" in shown and "1/2 tasks" in shown
    reporter.step_done(_explore(1))
    reporter.phase("training step 1")
    reporter.step_done(_train(1))
    shown = _view(reporter)
    top = shown.splitlines()[0]
    assert top.startswith("step 1/3") and "ETA" in top and "rollouts/min" in top
    assert "reward=0.25" in top and "accuracy=0.125" in top  # kept after training
    assert _loss_count(shown) == 1 and "loss=0.242" in top
    assert "training step 1" in shown
    reporter.finish()
    assert not reporter._display.running
    printed = ANSI.sub("", out.getvalue())
    assert "step 1/3 explored: reward=0.25" in printed
    assert "step 1/3 trained: loss=0.242" in printed


def test_terminal_display_holds_one_bar_however_many_steps() -> None:
    """Finished steps do not pile up as bars that push the current one out of view."""
    console, _ = _terminal_console()
    reporter = ConsoleReporter(console=console)
    reporter.plan(40, 0)
    for step in range(1, 31):
        reporter.start(f"step {step} (epoch 1)", 1)
        reporter.task_done(_result(step, 0))
        reporter.step_done(_explore(step))
    reporter.start("step 31 (epoch 1)", 1)
    lines = _view(reporter).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("step 31/40") and "reward=7.5" in lines[0]
    assert lines[1].strip().startswith("exploring (epoch 1)")
    reporter.finish()


def test_terminal_eval_and_sync_phases() -> None:
    console, _ = _terminal_console()
    reporter = ConsoleReporter(console=console)
    reporter.plan(3, 1)  # resumed after step 1
    reporter.start("eval test", 4)
    reporter.task_done(_result(0, 0))
    shown = _view(reporter)
    assert shown.startswith("step 1/3") and "evaluating test" in shown and "1/4 tasks" in shown
    reporter.step_done(EVAL)
    assert "eval test mean@4=0.5" in _view(reporter)
    reporter.phase("syncing weights")
    assert "syncing weights" in _view(reporter)
    reporter.phase("training step 2", 3, 8)
    assert "3/8" in _view(reporter)
    reporter.finish()


@contextmanager
def _stderr_handler() -> Iterator[logging.Handler]:
    """A root handler like ``logging.basicConfig`` makes: it writes to sys.stderr as it
    is now (inside a test: capsys's; made in the test body, not in a fixture, whose
    setup sees pytest's global capture stream instead)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


def test_logging_prints_through_the_console_while_the_bars_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    console, out = _terminal_console()
    reporter = ConsoleReporter(console=console)
    with _stderr_handler() as handler:
        reporter.plan(2)
        reporter.start("step 1 (epoch 1)", 2)
        logging.getLogger("reinforge.test").warning("buffer [x] is slow")
        reporter.warn("task 1 failed: [/tmp/x]")
        assert handler not in logging.getLogger().handlers  # swapped out while live
        reporter.finish()
        assert handler in logging.getLogger().handlers  # and back afterwards
        printed = ANSI.sub("", out.getvalue())
        assert "WARNING reinforge.test: buffer [x] is slow" in printed
        assert "warning: task 1 failed: [/tmp/x]" in printed
        assert "buffer [x] is slow" not in capsys.readouterr().err
        logging.getLogger("reinforge.test").warning("after the bars")
        assert "after the bars" in capsys.readouterr().err
        assert "after the bars" not in out.getvalue()


def test_plain_mode_leaves_logging_alone(capsys: pytest.CaptureFixture[str]) -> None:
    console, _ = _plain_console()
    reporter = ConsoleReporter(console=console)
    with _stderr_handler() as handler:
        reporter.start("step 1 (epoch 1)", 1)
        assert handler in logging.getLogger().handlers
        logging.getLogger("reinforge.test").warning("plain [x]")
        reporter.close()
    assert "WARNING reinforge.test: plain [x]" in capsys.readouterr().err
