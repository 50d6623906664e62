"""The commands that run workflows: ``explore``, ``eval`` and ``run``.

Each loads the config, opens a run session, drives it, and prints the end-of-run
summary (``reinforge.cli.summary``). The run machinery (torch, the engines, the
buffer) is imported only when one of them runs.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from reinforge.cli.common import (
    ConfigOpt,
    RunDirOpt,
    SetOpt,
    drive,
    fail,
    load,
    prepare_runtime,
    user_errors,
)
from reinforge.cli.summary import RunSummary, print_summary

if TYPE_CHECKING:
    from reinforge.config import ReinforgeConfig


def command_line(
    command: str, config: Path, overrides: list[str] | None, run_dir: Path | None
) -> str:
    """The ``reinforge`` command line that repeats this invocation (to resume it)."""
    args = ["reinforge", command, "-c", str(config)]
    for override in overrides or []:
        args += ["--set", override]
    if run_dir is not None:
        args += ["--run-dir", str(run_dir)]
    return shlex.join(args)


def _open(cfg: ReinforgeConfig) -> Any:
    """A run session for ``cfg`` (model loaded, run directory, buffer, explorer)."""
    from reinforge.launcher.session import RunSession

    prepare_runtime()  # after the imports, so that what they created gets frozen
    return RunSession.open(cfg)


def explore(config: ConfigOpt, set_: SetOpt = None, run_dir: RunDirOpt = None) -> None:
    """Run workflows over the training taskset and store the experiences in the buffer."""
    started = time.monotonic()
    try:
        cfg = load(config, set_, run_dir)
        session = _open(cfg)
    except user_errors() as exc:
        raise fail(exc) from None
    stored = f"interrupted; the steps finished before are stored in {cfg.storage_path}"
    summary = drive(session, cfg, session.explorer.explore, stored)
    buffer = str(cfg.storage_path)
    report = RunSummary(
        title=f"explore: {cfg.project}/{cfg.name}",
        wall_time=time.monotonic() - started,
        rows=list(session.reporter.history),
        places=[("buffer", buffer)],
        commands=[
            ("export", shlex.join(["reinforge", "export-buffer", buffer, "experiences.jsonl"]))
        ],
    )
    if summary.steps == 0:
        report.notes.append(("explored", "nothing: the taskset gave no step to run"))
    print_summary(report)


def evaluate(config: ConfigOpt, set_: SetOpt = None, run_dir: RunDirOpt = None) -> None:
    """Evaluate the policy on the eval tasksets: mean@n, std@n, best@k, worst@k."""
    from reinforge.config import ConfigError

    started = time.monotonic()
    try:
        cfg = load(config, set_, run_dir)
        if not cfg.buffer.explorer_input.eval_tasksets:
            raise ConfigError(f"{config}: buffer.explorer_input.eval_tasksets is empty")
        session = _open(cfg)
    except user_errors() as exc:
        raise fail(exc) from None
    drive(session, cfg, session.explorer.evaluate, "interrupted")
    print_summary(
        RunSummary(
            title=f"eval: {cfg.project}/{cfg.name}",
            wall_time=time.monotonic() - started,
            rows=list(session.reporter.history),
            places=[("buffer", str(cfg.storage_path))],
            eval_trend=False,
        )
    )


def _newest_checkpoint(cfg: ReinforgeConfig) -> Path | None:
    from reinforge.trainer.checkpoint import CheckpointManager

    found = CheckpointManager(cfg.checkpoint_dir).list()
    return found[-1] if found else None


def _run_rows(cfg: ReinforgeConfig, run_dir: Path) -> list[dict[str, Any]] | None:
    """The whole run's metrics (``metrics.jsonl``), or None when it is not written."""
    from reinforge.monitor.jsonl import read_jsonl

    path = run_dir / "metrics.jsonl"
    if not cfg.monitor.jsonl or not path.is_file():
        return None
    return read_jsonl(path)


def run_summary(
    cfg: ReinforgeConfig,
    session: Any,
    result: dict[str, Any],
    wall_time: float,
    again: str,
    plots: Path | None,
) -> RunSummary:
    """The summary of a ``reinforge run``: the story of the run and what to do next."""
    run_dir = Path(session.run_dir)
    report = RunSummary(
        title=f"run ({cfg.mode}): {cfg.project}/{cfg.name}",
        wall_time=wall_time,
        rows=list(session.reporter.history),
        # bench re-evaluates old checkpoints: only its own evaluations tell its story
        run_rows=None if cfg.mode == "bench" else _run_rows(cfg, run_dir),
    )
    if cfg.mode == "bench":
        report.notes.append(("benchmarked", f"{result.get('checkpoints', 0)} checkpoints"))
    checkpoint = _newest_checkpoint(cfg)
    if checkpoint is not None:
        report.places.append(("checkpoint", str(checkpoint)))
    if plots is not None:
        report.places.append(("plots", str(plots)))
    report.places.append(("buffer", str(cfg.storage_path)))
    label = "again" if cfg.mode == "bench" else "resume"
    report.commands.append((label, again))
    if checkpoint is not None:
        step = checkpoint.name.removeprefix("step_")
        export = ["reinforge", "export", str(run_dir), str(run_dir / "hf_model")]
        report.commands.append(("export", shlex.join([*export, "--step", step])))
    if cfg.monitor.jsonl:
        report.commands.append(("plot", shlex.join(["reinforge", "plot", str(run_dir)])))
    report.commands.append(("view", shlex.join(["reinforge", "view", str(run_dir)])))
    if cfg.monitor.tensorboard:
        report.commands.append(
            ("curves", shlex.join(["tensorboard", "--logdir", str(run_dir / "tensorboard")]))
        )
    return report


def run(config: ConfigOpt, set_: SetOpt = None, run_dir: RunDirOpt = None) -> None:
    """Train: the mode (both, explore, train, bench, sft) comes from the config's `mode`.

    Re-running on an existing run directory resumes it.
    """
    from reinforge.config import ConfigError

    started = time.monotonic()
    try:
        cfg = load(config, set_, run_dir)
        if cfg.mode == "eval":
            raise ConfigError(f"{config}: mode 'eval' is run with `reinforge eval`")
        from reinforge.launcher.modes import MODES, check_mode

        try:
            check_mode(cfg)  # before any model is loaded
        except ConfigError as exc:
            raise ConfigError(f"{config}: {exc}") from None
        session = _open(cfg)
    except user_errors() as exc:
        raise fail(exc) from None
    result = drive(session, cfg, lambda: MODES[cfg.mode](session), "interrupted")
    plots = None
    if cfg.monitor.plot and cfg.monitor.jsonl:
        from reinforge.monitor import plot_run

        paths = plot_run(session.run_dir)
        plots = paths[-1].parent if paths else None
    again = command_line("run", config, set_, run_dir)
    print_summary(run_summary(cfg, session, result, time.monotonic() - started, again, plots))


def sft(config: ConfigOpt, set_: SetOpt = None, run_dir: RunDirOpt = None) -> None:
    """Supervised fine-tuning on demonstrations: `reinforge run` with `mode: sft`.

    Re-running on an existing run directory resumes it.
    """
    run(config, [*(set_ or []), "mode=sft"], run_dir)


def register(app: typer.Typer) -> None:
    """Add the commands of this module to ``app``."""
    app.command()(explore)
    app.command("eval")(evaluate)
    app.command()(run)
    app.command()(sft)
