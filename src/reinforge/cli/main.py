"""The ``reinforge`` command."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from sqlalchemy.exc import DatabaseError

from reinforge.buffer import BufferStorageError, SQLiteExperienceStorage, TasksetError
from reinforge.buffer.pipeline import PipelineError
from reinforge.config import ConfigError, ReinforgeConfig, load_config
from reinforge.core import RegistryError
from reinforge.launcher.session import RunSession
from reinforge.models import ModelNotFoundError

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

# Errors that are the user's to fix (config, data, files, disk): one line, exit 2.
# Every ValueError counts (reinforge's config/taskset/buffer errors derive from it);
# --debug shows the traceback.
_USER_ERRORS = (
    ValueError,
    PipelineError,
    ModelNotFoundError,
    RegistryError,
    OSError,
    DatabaseError,
)
# errors whose message says what to fix by itself (others get their type and a hint)
_SELF_EXPLAINED = (
    ConfigError,
    TasksetError,
    BufferStorageError,
    PipelineError,
    ModelNotFoundError,
    RegistryError,
    OSError,
)
_debug = False


@app.callback()
def _options(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the traceback of errors reported in one line.")
    ] = False,
) -> None:
    global _debug
    _debug = debug


def _load(config: Path, overrides: list[str] | None, run_dir: Path | None) -> ReinforgeConfig:
    cfg = load_config(config, overrides or [])
    if run_dir is not None:
        cfg.run_dir = str(run_dir)
    return cfg


@contextmanager
def _sigterm_as_interrupt() -> Iterator[list[int]]:
    """Handle SIGTERM like Ctrl-C (asyncio then cancels the run, which saves and stops)
    inside the block; the list holds the number of the signal that stopped the run.
    The previous handler is back afterwards (the command may run inside a test)."""
    received = [int(signal.SIGINT)]

    def on_sigterm(signum: int, frame: object) -> None:
        received[0] = signum
        os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield received
    finally:
        signal.signal(signal.SIGTERM, previous)


def _describe(exc: BaseException, buffer: Path | None = None) -> str:
    """One line for an error: reinforge's own say what to fix; others get a hint."""
    if isinstance(exc, DatabaseError):
        name = f"the buffer {buffer}" if buffer is not None else "the buffer database"
        return (
            f"{name} is corrupt or unreadable ({exc.orig}); move it aside (or delete it) "
            "to start a new buffer, or point buffer.storage.path elsewhere"
        )
    if isinstance(exc, _SELF_EXPLAINED):
        return str(exc)
    return f"{type(exc).__name__}: {exc} (run with --debug for the traceback)"


def _fail(exc: BaseException, buffer: Path | None = None) -> typer.Exit:
    """Report ``exc`` in one line (``buffer``: the run's buffer file, named if it is
    the database that failed); the caller raises the returned exit (code 2)."""
    if _debug:
        traceback.print_exception(exc)
    err.print(f"[bold red]error:[/bold red] {escape(_describe(exc, buffer))}", highlight=False)
    return typer.Exit(code=2)


def _interrupted(message: str, signum: int) -> typer.Exit:
    """Ctrl-C / SIGTERM: say where the run stopped; exit 128 + the signal's number."""
    err.print(f"[bold yellow]{escape(message)}[/bold yellow]", highlight=False)
    return typer.Exit(code=128 + signum)


def _drive(session: Any, cfg: ReinforgeConfig, work: Any, interrupted: str) -> Any:
    """Await ``work`` in ``session`` (operators prepared and closed around it), then
    close the session. User errors become one line and exit 2; Ctrl-C / SIGTERM print
    ``interrupted`` (or what a ``RunInterrupted`` says) and exit 128 + the signal."""
    from reinforge.launcher.modes import RunInterrupted

    with _sigterm_as_interrupt() as stop_signal:
        try:
            return asyncio.run(session.run(work))
        except _USER_ERRORS as exc:
            raise _fail(exc, cfg.storage_path) from None
        except (RunInterrupted, KeyboardInterrupt) as exc:
            said = str(exc) if isinstance(exc, RunInterrupted) else interrupted
            raise _interrupted(said, stop_signal[0]) from None
        finally:
            session.close()


@app.command()
def explore(config: ConfigOpt, set_: SetOpt = None, run_dir: RunDirOpt = None) -> None:
    """Run workflows over the training taskset and store the experiences in the buffer."""
    try:
        cfg = _load(config, set_, run_dir)
        session = RunSession.open(cfg)
    except _USER_ERRORS as exc:
        raise _fail(exc) from None
    reporter = session.reporter
    stored = f"interrupted; the steps finished before are stored in {cfg.storage_path}"
    summary = _drive(session, cfg, session.explorer.explore, stored)
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
        session = RunSession.open(cfg)
    except _USER_ERRORS as exc:
        raise _fail(exc) from None
    reporter = session.reporter
    metrics = _drive(session, cfg, session.explorer.evaluate, "interrupted")
    reporter.summary(f"eval: {cfg.project}/{cfg.name}", metrics)
    for key, value in metrics.items():
        if "/mean@" in key:
            typer.echo(f"{key}: {value:.3f}")


@app.command()
def run(config: ConfigOpt, set_: SetOpt = None, run_dir: RunDirOpt = None) -> None:
    """Train: the mode (both, explore, train, bench) comes from the config's `mode`.

    Re-running on an existing run directory resumes it.
    """
    from reinforge.launcher.modes import MODES, check_mode
    from reinforge.monitor import plot_run

    try:
        cfg = _load(config, set_, run_dir)
        if cfg.mode == "eval":
            raise ConfigError(f"{config}: mode 'eval' is run with `reinforge eval`")
        try:
            check_mode(cfg)  # before any model is loaded
        except ConfigError as exc:
            raise ConfigError(f"{config}: {exc}") from None
        session = RunSession.open(cfg)
    except _USER_ERRORS as exc:
        raise _fail(exc) from None
    result = _drive(session, cfg, lambda: MODES[cfg.mode](session), "interrupted")
    session.reporter.summary(f"run ({cfg.mode}): {cfg.project}/{cfg.name}", result)
    if cfg.monitor.plot and cfg.monitor.jsonl:
        paths = plot_run(session.run_dir)
        if paths:
            typer.echo(f"plots: {paths[-1].parent}")


@app.command()
def plot(
    run_dir: Annotated[Path, typer.Argument(help="Run directory (holds metrics.jsonl).")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Output folder (default RUN_DIR/plots).")
    ] = None,
) -> None:
    """Write PNG curves (reward, eval accuracy, loss, KL, entropy, response length, step time)."""
    from reinforge.monitor import plot_run

    try:
        paths = plot_run(run_dir, out)
    except FileNotFoundError as exc:
        raise _fail(exc) from None
    for path in paths:
        typer.echo(str(path))


@app.command()
def export(
    run_dir: Annotated[Path, typer.Argument(help="Run directory.")],
    output: Annotated[Path, typer.Argument(help="Folder for the plain HF model.")],
    step: Annotated[int | None, typer.Option(help="Checkpoint step (default: the newest).")] = None,
    model: Annotated[
        str | None, typer.Option(help="Base model (default: from the run's config).")
    ] = None,
) -> None:
    """Export a checkpoint as a plain Hugging Face model directory (LoRA merged)."""
    import json

    from reinforge.models import resolve_model_path
    from reinforge.trainer.checkpoint import CheckpointManager, export_model

    checkpoints = CheckpointManager(run_dir / "checkpoints").list()
    if step is not None:
        checkpoints = [c for c in checkpoints if c.name == f"step_{step}"]
    if not checkpoints:
        raise _fail(
            FileNotFoundError(
                f"no checkpoint{'' if step is None else f' step_{step}'} in {run_dir}/checkpoints"
            )
        )
    try:
        cache_dir = None
        if model is None or (run_dir / "config.json").is_file():
            run_cfg = json.loads((run_dir / "config.json").read_text())
            cache_dir = run_cfg["model"].get("cache_dir")
            model = model or run_cfg["model"]["model_path"]
        out = export_model(checkpoints[-1], resolve_model_path(model, cache_dir), output)
    except _USER_ERRORS as exc:
        raise _fail(exc) from None
    typer.echo(f"exported {checkpoints[-1].name} to {out}")


@app.command("export-buffer")
def export_buffer(
    buffer: Annotated[Path, typer.Argument(help="SQLite buffer file (RUN_DIR/buffer.db).")],
    output: Annotated[Path, typer.Argument(help="Output .jsonl file.")],
) -> None:
    """Export every stored experience to JSONL (tokens, logprobs, rewards, texts, ids)."""
    if not buffer.is_file():
        raise _fail(FileNotFoundError(f"buffer file '{buffer}' does not exist"))
    try:
        storage = SQLiteExperienceStorage(buffer)
    except _USER_ERRORS as exc:
        raise _fail(exc) from None
    try:
        n = storage.export_jsonl(output)
    except _USER_ERRORS as exc:
        raise _fail(exc, buffer) from None
    finally:
        storage.close()
    typer.echo(f"wrote {n} experiences to {output}")


@app.command("check-template")
def check_template_cmd(
    model: Annotated[
        str, typer.Argument(help="Catalog model name (e.g. smollm2-135m-instruct) or HF model dir.")
    ],
    chat_template: Annotated[
        Path | None,
        typer.Option("--chat-template", help="Check this Jinja file instead of the model's own."),
    ] = None,
) -> None:
    """Report whether the model's chat template is append-only (needed for multi-turn experiences).

    Exits 0 when it is, 1 when it is not (multi-turn history then falls back to one
    experience per turn), 2 when the model or template cannot be loaded.
    """
    from reinforge.models.template_check import check_template, load_tokenizer

    try:
        tokenizer = load_tokenizer(model)
        template = chat_template.read_text() if chat_template is not None else None
    except _USER_ERRORS as exc:
        raise _fail(exc) from None
    report = check_template(tokenizer, template)
    typer.echo(report.summary())
    raise typer.Exit(code=0 if report.append_only else 1)


@app.command()
def serve(
    config: ConfigOpt,
    host: Annotated[
        str,
        typer.Option(help="Address to bind; 0.0.0.0 exposes the server to the network."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port (0 picks a free one).")] = 8000,
    api_key: Annotated[
        str | None,
        typer.Option(
            envvar="REINFORGE_API_KEY",
            help="Require 'Authorization: Bearer KEY' on every /v1 route (/health stays open).",
            show_default=False,
        ),
    ] = None,
    served_model_name: Annotated[
        str | None,
        typer.Option(
            help="Model name listed by /v1/models and put in responses "
            "(default: model.model_path).",
            show_default=False,
        ),
    ] = None,
    set_: SetOpt = None,
) -> None:
    """Serve the config's model over an OpenAI-compatible HTTP API (/v1/chat/completions,
    /v1/completions, /v1/models, /health) until Ctrl-C.

    Responses carry token ids (prompt_token_ids, choices[].token_ids) like vLLM's.
    """
    from reinforge.launcher.serve import build_server
    from reinforge.models import openai_server

    try:
        cfg = _load(config, set_, None)
    except _USER_ERRORS as exc:
        raise _fail(exc) from None
    try:  # before the model loads: a taken port fails at once
        sock = openai_server.bind_socket(host, port)
    except OSError as exc:
        raise _fail(OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}")) from None
    try:
        server = build_server(cfg, api_key=api_key, served_model_name=served_model_name, host=host)
    except BaseException as exc:
        sock.close()
        if isinstance(exc, _USER_ERRORS):
            raise _fail(exc) from None
        raise
    url = openai_server.socket_url(sock)
    if not api_key and not _is_loopback(host):
        err.print(
            f"[yellow]warning:[/yellow] serving on {host} without --api-key: "
            "anyone who can reach this port can use the model",
            highlight=False,
        )
    typer.echo(f"serving {server.served_model_name} at {url}/v1 (health: {url}/health)")
    try:
        openai_server.run_server(server.app, sock=sock)
    finally:
        server.close()


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    # Objects created at import time (torch, transformers, ...) live for the whole
    # run; moving them to the permanent generation makes full garbage collections,
    # which the explorer triggers often, cheap (about 12% of explorer overhead).
    gc.freeze()
    app()


if __name__ == "__main__":
    main()
