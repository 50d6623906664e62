"""The ``reinforge`` command."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from reinforge.buffer import SQLiteExperienceStorage, TasksetError
from reinforge.config import ConfigError, ReinforgeConfig, load_config
from reinforge.core import RegistryError
from reinforge.explorer import Explorer
from reinforge.models import ModelNotFoundError
from reinforge.monitor import ConsoleReporter, JsonlMetrics

app = typer.Typer(
    help="reinforge: reinforcement fine-tuning of LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True)

ConfigOpt = Annotated[Path, typer.Option("--config", "-c", help="YAML config file.")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set", help="Override a config key, e.g. --set buffer.batch_size=8 (repeatable)."
    ),
]
RunDirOpt = Annotated[
    Path | None, typer.Option("--run-dir", help="Run directory (overrides run_dir).")
]

_USER_ERRORS = (ConfigError, TasksetError, ModelNotFoundError, RegistryError, FileNotFoundError)


def _load(config: Path, overrides: list[str] | None, run_dir: Path | None) -> ReinforgeConfig:
    cfg = load_config(config, overrides or [])
    if run_dir is not None:
        cfg.run_dir = str(run_dir)
    return cfg


def _explorer(cfg: ReinforgeConfig) -> tuple[Explorer, ConsoleReporter]:
    run_dir = cfg.resolved_run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    jsonl = JsonlMetrics(run_dir / "metrics.jsonl") if cfg.monitor.jsonl else None
    reporter = ConsoleReporter(jsonl, progress=cfg.monitor.progress)
    explorer = Explorer.from_config(
        cfg.model,
        cfg.buffer,
        cfg.explorer,
        cfg.storage_path,
        config_dir=cfg.config_dir,
        reporter=reporter,
    )
    return explorer, reporter


def _fail(exc: BaseException) -> typer.Exit:
    err.print(f"[bold red]error:[/bold red] {exc}", highlight=False)
    return typer.Exit(code=2)


@app.command()
def explore(config: ConfigOpt, set_: SetOpt = None, run_dir: RunDirOpt = None) -> None:
    """Run workflows over the training taskset and store the experiences in the buffer."""
    try:
        cfg = _load(config, set_, run_dir)
        explorer, reporter = _explorer(cfg)
    except _USER_ERRORS as exc:
        raise _fail(exc) from None
    try:
        summary = asyncio.run(explorer.explore())
    except _USER_ERRORS as exc:
        raise _fail(exc) from None
    finally:
        explorer.close()
    rows: dict[str, object] = {
        "steps": summary.steps,
        "tasks": summary.tasks,
        "experiences stored": summary.experiences,
        **{f"tasks {status}": n for status, n in sorted(summary.status_counts.items())},
        **{k.removeprefix("explore/"): v for k, v in summary.metrics.items()},
        "elapsed (s)": round(summary.elapsed, 1),
        "buffer": str(cfg.storage_path),
    }
    reporter.summary(f"explore: {cfg.project}/{cfg.name}", rows)
    if "explore/accuracy" in summary.metrics:
        typer.echo(f"accuracy: {summary.metrics['explore/accuracy']:.3f}")


@app.command("eval")
def evaluate(config: ConfigOpt, set_: SetOpt = None, run_dir: RunDirOpt = None) -> None:
    """Evaluate the policy on the eval tasksets: mean@n, std@n, best@k, worst@k."""
    try:
        cfg = _load(config, set_, run_dir)
        if not cfg.buffer.explorer_input.eval_tasksets:
            raise ConfigError(f"{config}: buffer.explorer_input.eval_tasksets is empty")
        explorer, reporter = _explorer(cfg)
    except _USER_ERRORS as exc:
        raise _fail(exc) from None
    try:
        metrics = asyncio.run(explorer.evaluate())
    except _USER_ERRORS as exc:
        raise _fail(exc) from None
    finally:
        explorer.close()
    reporter.summary(f"eval: {cfg.project}/{cfg.name}", metrics)
    for key, value in metrics.items():
        if "/mean@" in key:
            typer.echo(f"{key}: {value:.3f}")


@app.command("export-buffer")
def export_buffer(
    buffer: Annotated[Path, typer.Argument(help="SQLite buffer file (RUN_DIR/buffer.db).")],
    output: Annotated[Path, typer.Argument(help="Output .jsonl file.")],
) -> None:
    """Export every stored experience to JSONL (tokens, logprobs, rewards, texts, ids)."""
    if not buffer.is_file():
        raise _fail(FileNotFoundError(f"buffer file '{buffer}' does not exist"))
    storage = SQLiteExperienceStorage(buffer)
    n = storage.export_jsonl(output)
    storage.close()
    typer.echo(f"wrote {n} experiences to {output}")


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    app()


if __name__ == "__main__":
    main()
