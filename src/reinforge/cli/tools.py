"""Commands that work on what a run left behind, or on a model: ``plot``, ``export``,
``export-buffer`` and ``check-template``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from reinforge.cli.common import fail, prepare_runtime, user_errors


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
        raise fail(exc) from None
    for path in paths:
        typer.echo(str(path))


def export(
    run_dir: Annotated[Path, typer.Argument(help="Run directory.")],
    output: Annotated[Path, typer.Argument(help="Folder for the plain HF model.")],
    step: Annotated[int | None, typer.Option(help="Checkpoint step (default: the newest).")] = None,
    model: Annotated[
        str | None, typer.Option(help="Base model (default: from the run's config).")
    ] = None,
    adapter_only: Annotated[
        bool,
        typer.Option(
            "--adapter-only",
            help="LoRA runs: write only the adapter (peft format) and the tokenizer.",
        ),
    ] = False,
) -> None:
    """Export a checkpoint as a plain Hugging Face model directory (LoRA merged).

    A README.md model card (base model, algorithm, steps, eval scores) goes with it.
    """
    from reinforge.models import resolve_model_path
    from reinforge.trainer.checkpoint import CheckpointManager, export_adapter, export_model
    from reinforge.trainer.model_card import write_model_card

    prepare_runtime()

    checkpoints = CheckpointManager(run_dir / "checkpoints").list()
    if step is not None:
        checkpoints = [c for c in checkpoints if c.name == f"step_{step}"]
    if not checkpoints:
        raise fail(
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
        write = export_adapter if adapter_only else export_model
        out = write(checkpoints[-1], resolve_model_path(model, cache_dir), output)
        write_model_card(out, run_dir, checkpoints[-1], model, adapter_only=adapter_only)
    except user_errors() as exc:
        raise fail(exc) from None
    what = "the adapter of " if adapter_only else ""
    typer.echo(f"exported {what}{checkpoints[-1].name} to {out}")


def export_buffer(
    buffer: Annotated[Path, typer.Argument(help="SQLite buffer file (RUN_DIR/buffer.db).")],
    output: Annotated[Path, typer.Argument(help="Output .jsonl file.")],
) -> None:
    """Export every stored experience to JSONL (tokens, logprobs, rewards, texts, ids)."""
    if not buffer.is_file():
        raise fail(FileNotFoundError(f"buffer file '{buffer}' does not exist"))
    from reinforge.buffer import SQLiteExperienceStorage

    try:
        storage = SQLiteExperienceStorage(buffer)
    except user_errors() as exc:
        raise fail(exc) from None
    try:
        n = storage.export_jsonl(output)
    except user_errors() as exc:
        raise fail(exc, buffer) from None
    finally:
        storage.close()
    typer.echo(f"wrote {n} experiences to {output}")


def check_template(
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
    from reinforge.models.template_check import check_template as check
    from reinforge.models.template_check import load_tokenizer

    prepare_runtime()

    try:
        tokenizer = load_tokenizer(model)
        template = chat_template.read_text() if chat_template is not None else None
    except user_errors() as exc:
        raise fail(exc) from None
    report = check(tokenizer, template)
    typer.echo(report.summary())
    raise typer.Exit(code=0 if report.append_only else 1)


def register(app: typer.Typer) -> None:
    """Add the commands of this module to ``app``."""
    app.command()(plot)
    app.command()(export)
    app.command("export-buffer")(export_buffer)
    app.command("check-template")(check_template)
