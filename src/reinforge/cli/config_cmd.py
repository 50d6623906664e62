"""``reinforge config``: show the resolved config of a run, or the JSON schema of configs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from reinforge.cli.common import RunDirOpt, SetOpt, fail, fail_message, load, user_errors


def resolved_yaml(config: Path, data: dict[str, Any]) -> str:
    """``data`` as YAML under a header saying where it came from and what relative
    paths in it are relative to (the config file's folder)."""
    import yaml

    folder = config.resolve().parent
    header = (
        f"# {config}, resolved by `reinforge config`: defaults filled in, secrets masked\n"
        f"# relative paths (tasksets, plugins) are relative to {folder}\n"
    )
    body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    return header + body


def placement_comment(cfg: Any, gpus: int | None) -> str:
    """The run's GPU placement plan as YAML comments (engines and trainer ranks on which
    GPUs), for this machine or for ``gpus`` visible GPUs."""
    from reinforge.launcher.gpu_plan import describe

    where = "this machine" if gpus is None else f"{gpus} visible GPU(s)"
    lines = describe(cfg, gpus)
    return f"# GPU placement on {where}:\n" + "".join(f"#   {line}\n" for line in lines)


def memory_comment(cfg: Any, shape_name: str | None) -> str:
    """The memory plan of the run (``trainer/memory_plan.py``) as YAML comments: what each
    trainer rank and the driver will hold, for the config's model or a known shape."""
    from reinforge.trainer.memory_plan import KNOWN_SHAPES, ModelShape, plan_memory, run_shape

    if shape_name is not None:
        if shape_name not in KNOWN_SHAPES:
            known = ", ".join(KNOWN_SHAPES)
            raise ValueError(f"--model-shape {shape_name!r}: not a known shape ({known})")
        shape = KNOWN_SHAPES[shape_name]
    else:
        from reinforge.models.catalog import resolve_model_path

        shape = ModelShape.from_path(resolve_model_path(cfg.model.model_path, cfg.model.cache_dir))
    lines = plan_memory(shape, cfg.trainer, run_shape(cfg)).lines()
    return "# memory plan (an estimate; docs/scale_out.md):\n" + "".join(
        f"#   {line}\n" for line in lines
    )


def config(
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="YAML config file to resolve.", show_default=False),
    ] = None,
    set_: SetOpt = None,
    run_dir: RunDirOpt = None,
    resolved: Annotated[
        bool,
        typer.Option(
            "--resolved", help="Print the config with every default filled in (the default)."
        ),
    ] = False,
    schema: Annotated[
        bool,
        typer.Option("--schema", help="Print the JSON schema of config files (for editors)."),
    ] = False,
    gpus: Annotated[
        int | None,
        typer.Option(
            "--gpus",
            min=0,
            help="Show the GPU placement for this many visible GPUs (default: this machine's).",
            show_default=False,
        ),
    ] = None,
    memory: Annotated[
        bool,
        typer.Option(
            "--memory",
            help="Also show the memory plan: what each trainer rank and the driver will "
            "hold (parameters, gradients, optimizer, reference, activations, sync buckets).",
        ),
    ] = False,
    model_shape: Annotated[
        str | None,
        typer.Option(
            "--model-shape",
            help="With --memory: plan for a known model shape instead of the config's "
            "model (qwen2.5-1.5b, qwen2.5-7b, qwen2.5-14b).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Print a config as the run would see it, or the JSON schema of all configs.

    With -c FILE (and --resolved, the default): the validated config as YAML, with
    --set overrides applied, every default filled in, run_dir resolved and secrets
    masked, then (as comments) which GPUs the vLLM replicas and the trainer ranks get
    on this machine, or with --gpus N on a node with N GPUs; with --memory, what each
    trainer rank and the driver will hold. With --schema: the JSON schema that editors
    use to complete and check config files (see docs/cli.md).
    """
    if model_shape is not None and not memory:
        raise fail_message("--model-shape goes with --memory")
    if schema and (config is not None or resolved or set_ or run_dir is not None or gpus or memory):
        raise fail_message("--schema prints the schema of every config; it takes no -c/--set")
    if schema:
        from reinforge.config.schema import config_json_schema

        typer.echo(json.dumps(config_json_schema(), indent=2))
        return
    if config is None:
        raise fail_message("give a config file (-c FILE [--resolved]) or --schema")
    try:
        cfg = load(config, set_, run_dir)
    except user_errors() as exc:
        raise fail(exc) from None
    data = cfg.public_dump()
    if cfg.run_dir is None:  # the default, spelled out (a set run_dir may be a secret)
        data["run_dir"] = str(cfg.resolved_run_dir)
    typer.echo(resolved_yaml(config, data), nl=False)
    typer.echo(placement_comment(cfg, gpus), nl=False)
    if memory:
        try:
            typer.echo(memory_comment(cfg, model_shape), nl=False)
        except (ValueError, FileNotFoundError) as exc:
            raise fail(exc) from None


def register(app: typer.Typer) -> None:
    """Add ``config`` to ``app``."""
    app.command()(config)
