"""``reinforge doctor -c CONFIG``: check a config before a long run.

It loads the configured model and engine, samples a few rollouts of the configured
workflow (the first ``--rows`` tasks of the training taskset, each ``--repeats``
times: its ``repeat_times``, at most 4, by default), and runs the checks of ``doctor_checks`` on them: the chat template, tool
calls, the sampling settings against the trainer's ratio, the sampled tokens against
what each experience holds, the reward's spread, the sampler-vs-trainer log-prob gap,
and whether the first rows of every taskset build their workflow. Nothing is written:
no run directory, no buffer. Exit 0 when no check fails (warnings allowed), 1 when
one does, 2 when the config or model cannot be loaded.

What it does not check: the experience pipeline's operators (they run on the
experiences later; none re-tokenises), a sync of new weights (the weight check after
every sync does), and anything of a real run's length.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from reinforge.cli.common import ConfigOpt, SetOpt, fail, load, prepare_runtime, user_errors

if TYPE_CHECKING:
    from reinforge.cli.doctor_checks import Finding, SampledCalls
    from reinforge.config import ReinforgeConfig
    from reinforge.core import Experience, Task

#: the trainer's forward runs on this many experiences at a time
_FORWARD_ROWS = 16
#: rollouts per task unless --repeats says (a task's repeat_times when it is fewer):
#: 4 rows x 4 keeps the demo's doctor under a minute on 2 cores
DEFAULT_REPEATS = 4


def _record_samples(engine: Any) -> SampledCalls:
    """Have ``engine`` keep every completion it returns, by the prompt ids it was given
    (an instance attribute over ``submit``, which is what the wrapper calls)."""
    sampled: SampledCalls = {}
    submit = engine.submit

    def recording(prompt_ids: list[int], params: Any) -> Any:
        future = submit(prompt_ids, params)
        key = tuple(prompt_ids)

        def keep(done: Any) -> None:
            if not done.cancelled() and done.exception() is None:
                sampled.setdefault(key, []).extend(done.result())

        future.add_done_callback(keep)
        return future

    engine.submit = recording
    return sampled


def _tasksets(cfg: ReinforgeConfig) -> list[Any]:
    inputs = cfg.buffer.explorer_input
    return [t for t in [inputs.taskset, *inputs.eval_tasksets] if t is not None]


def _load_tasks(cfg: ReinforgeConfig, taskset: Any) -> Any:
    from reinforge.buffer.taskset import load_taskset

    return load_taskset(
        taskset,
        base_dir=cfg.config_dir,
        default_workflow=cfg.explorer.default_workflow_type,
        default_reward_fn=cfg.explorer.default_reward_fn_type,
    )


def build_findings(
    cfg: ReinforgeConfig, engine: Any, aux: Any, rows: int
) -> tuple[list[Finding], list[Task]]:
    """Whether the first ``rows`` rows of every taskset build their workflow (and its
    reward function); the training taskset's tasks that did, to sample from."""
    from reinforge.cli.doctor_checks import FAIL, PASS, WARN, Finding
    from reinforge.models import ModelWrapper

    findings, train_tasks = [], []
    model = ModelWrapper(engine, model_name=cfg.model.model_path)
    for i, taskset in enumerate(_tasksets(cfg)):
        try:
            loaded = _load_tasks(cfg, taskset)
        except Exception as exc:
            findings.append(Finding(f"tasks: {taskset.name}", FAIL, f"{exc}"))
            continue
        errors, built = [], []
        for task in loaded.tasks[:rows]:
            try:
                task.reward_fn_cls  # noqa: B018  (resolves the name)
                task.to_workflow(model, aux.clients())
                built.append(task)
            except Exception as exc:
                errors.append(f"row {task.task_id}: {type(exc).__name__}: {exc}")
        if i == 0 and taskset is cfg.buffer.explorer_input.taskset:
            train_tasks = built
        if errors:
            findings.append(Finding(f"tasks: {taskset.name}", FAIL, "; ".join(errors[:2])))
        elif not built:
            findings.append(Finding(f"tasks: {taskset.name}", FAIL, "no valid row"))
        elif loaded.invalid:
            findings.append(
                Finding(
                    f"tasks: {taskset.name}",
                    WARN,
                    f"{len(built)} rows build; {len(loaded.invalid)} invalid rows are skipped",
                )
            )
        else:
            findings.append(Finding(f"tasks: {taskset.name}", PASS, f"{len(built)} rows build"))
    return findings, train_tasks


async def _rollouts(cfg: ReinforgeConfig, engine: Any, aux: Any, tasks: list[Task]) -> list[Any]:
    from reinforge.explorer.runner import WorkflowRunner
    from reinforge.explorer.scheduler import Scheduler, make_requests

    requests = make_requests(
        tasks,
        taskset=cfg.buffer.explorer_input.taskset.name,
        timeout=cfg.explorer.max_timeout,
        max_retries=0,
    )
    rollout = cfg.explorer.rollout_model
    runners = [
        WorkflowRunner(
            engine,
            runner_id=i,
            model_name=cfg.model.model_path,
            default_max_tokens=cfg.model.max_response_tokens,
            enable_history=rollout.enable_history,
            history_shape=rollout.history_shape,
            auxiliary_models=aux.clients(),
        )
        for i in range(max(1, min(cfg.explorer.runner_concurrency, len(requests))))
    ]
    try:
        return await Scheduler(runners).run(requests)
    finally:
        for runner in runners:
            runner.close()


def policy_loss(cfg: ReinforgeConfig) -> str | None:
    """The policy loss the config trains with (None: it does not train on rollouts)."""
    if cfg.mode not in ("both", "train"):
        return None
    from reinforge.algorithms import resolve_algorithm

    return resolve_algorithm(cfg.trainer.algorithm, cfg.trainer.algorithm_args).policy_loss_fn


def logprob_gap(
    cfg: ReinforgeConfig, model_dir: Path, exps: list[Experience], pad: int, start: Any
) -> Finding:
    """The trainer's log-probs (its own forward: device, precision, LoRA as configured)
    of the sampled tokens, against the engine's."""
    import torch

    from reinforge.algorithms import collate
    from reinforge.cli.doctor_checks import SKIP, Finding, gap_finding
    from reinforge.trainer.token_logprobs import token_logprobs
    from reinforge.trainer.trainer import Trainer

    usable = [
        e
        for e in exps
        if e.logprobs is not None and e.multi_modal_inputs is None and bool(e.action_mask.any())
    ]
    if not usable:
        return Finding("sampler vs trainer", SKIP, "no experience with sampled log-probs")
    trainer = Trainer(model_dir, cfg.trainer, pad_token_id=pad, init_weights=start)
    try:
        gaps = []
        for i in range(0, len(usable), _FORWARD_ROWS):
            batch = collate(usable[i : i + _FORWARD_ROWS], pad).to(trainer.device)
            with torch.no_grad(), trainer._autocast():
                trainer._use_attention(trainer.model, batch)
                mine = token_logprobs(trainer.model, batch, only=batch.response_mask)[0]
            gaps.append((mine.float() - batch.old_logprobs)[batch.loss_mask].abs())
    finally:
        trainer.close()
    gap = torch.cat(gaps)
    stated = (
        "both are log-probs of the raw distribution (temperature 1, no top-p/top-k "
        "renormalisation: see the sampling line)"
    )
    return gap_finding(float(gap.mean()), float(gap.max()), int(gap.numel()), stated)


def run_doctor(cfg: ReinforgeConfig, *, rows: int = 4, repeats: int | None = None) -> list[Finding]:
    """Every check's finding, in report order (see the module docstring)."""
    from reinforge.cli.doctor_checks import (
        FAIL,
        SKIP,
        Finding,
        reward_finding,
        sampling_finding,
        template_finding,
        token_finding,
        tool_call_finding,
    )
    from reinforge.launcher.plugins import load_plugins
    from reinforge.models import resolve_model_path
    from reinforge.models.auxiliary import AuxiliaryModels

    load_plugins(cfg.plugins, cfg.config_dir)
    model = cfg.model
    has_weights = model.engine in ("hf", "vllm", "openai")
    model_dir = resolve_model_path(model.model_path, model.cache_dir) if has_weights else None
    start = None
    engine = model.create_engine()
    try:
        if model.init_from and model.has_weights:
            from reinforge.trainer.init_weights import init_weights

            start = init_weights(model.init_from, model_dir)
            engine.update_weights(start, version=0)
        findings = [template_finding(engine.tokenizer), tool_call_finding(engine.tokenizer)]
        train = cfg.buffer.explorer_input.taskset
        if train is not None:
            args = train.rollout_args
            findings.append(
                sampling_finding(args.temperature, args.top_p, args.top_k, policy_loss(cfg))
            )
        aux = AuxiliaryModels.from_configs(cfg.explorer.auxiliary_models, engine)
        try:
            built, tasks = build_findings(cfg, engine, aux, rows)
            findings += built
            if not tasks:
                findings.append(Finding("rollouts", SKIP, "no training task to sample"))
                return findings
            for task in tasks:
                task.repeat_times = repeats or min(task.repeat_times, DEFAULT_REPEATS)
                task.rollout_args.n = task.repeat_times
            sampled = _record_samples(engine)
            results = asyncio.run(_rollouts(cfg, engine, aux, tasks))
        finally:
            aux.close()
        failed = [r for r in results if not r.ok]
        exps = [e for r in results for e in r.experiences]
        if failed:
            first = (failed[0].error or failed[0].status).splitlines()[0]
            findings.append(
                Finding("rollouts", FAIL, f"{len(failed)} of {len(results)} failed: {first}")
            )
        if not exps:
            return findings
        findings += [token_finding(exps, sampled), reward_finding(exps)]
        if model_dir is None or not model.has_weights:
            findings.append(
                Finding("sampler vs trainer", SKIP, f"the {model.engine} engine has no weights")
            )
        elif policy_loss(cfg) is None:
            findings.append(Finding("sampler vs trainer", SKIP, f"mode {cfg.mode} trains nothing"))
        else:
            pad = engine.tokenizer.pad_token_id
            findings.append(logprob_gap(cfg, model_dir, exps, pad, start))
        return findings
    finally:
        engine.close()


def print_report(findings: list[Finding], title: str) -> None:
    """The findings as one rich table; failures in red, warnings in yellow."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    colour = {"pass": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}
    table = Table(title=title, show_lines=False, expand=False)
    table.add_column("check", no_wrap=True)
    table.add_column("result", no_wrap=True)
    table.add_column("detail")
    for f in findings:
        table.add_row(f.check, f"[{colour[f.status]}]{f.status}[/]", escape(f.detail))
    Console(soft_wrap=False, width=160).print(table)


def doctor(
    config: ConfigOpt,
    set_: SetOpt = None,
    rows: Annotated[
        int, typer.Option("--rows", min=1, help="Tasks of each taskset to build and sample.")
    ] = 4,
    repeats: Annotated[
        int | None,
        typer.Option(
            "--repeats", min=1, help="Rollouts per task (default: its repeat_times, at most 4)."
        ),
    ] = None,
) -> None:
    """Check a config before a long run: template, tool calls, sampled tokens, log-prob gap,
    reward spread, tasks. Exits 1 when a check fails."""
    from reinforge.cli.doctor_checks import FAIL

    try:
        cfg = load(config, set_, None)
        prepare_runtime()
        findings = run_doctor(cfg, rows=rows, repeats=repeats)
    except user_errors() as exc:
        raise fail(exc) from None
    failed = sum(f.status == FAIL for f in findings)
    print_report(findings, f"doctor: {cfg.project}/{cfg.name} ({cfg.model.engine} engine)")
    typer.echo(f"{failed} check(s) failed" if failed else "no check failed")
    raise typer.Exit(code=1 if failed else 0)


def register(app: typer.Typer) -> None:
    """Add ``doctor`` to ``app``."""
    app.command()(doctor)
