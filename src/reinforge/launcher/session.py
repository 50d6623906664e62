"""Build the pieces of a run from its config: run directory, buffer, engine, explorer, monitor."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.buffer.pipeline import ExperiencePipeline
from reinforge.config import ConfigError, ReinforgeConfig
from reinforge.explorer import Explorer
from reinforge.launcher.plugins import load_plugins
from reinforge.models import resolve_model_path
from reinforge.models.auxiliary import AuxiliaryModels
from reinforge.monitor import (
    ConsoleReporter,
    JsonlMetrics,
    MetricSink,
    MlflowSink,
    TensorBoardSink,
    WandbSink,
)

T = TypeVar("T")


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to a file only its owner can read (0600)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    path.chmod(0o600)


def private_buffer(path: Path) -> None:
    """Make the buffer file (created empty if missing) and its journal files 0600.

    SQLite creates the -wal and -shm files with the mode of the database file, so a
    database made private before SQLite first opens it keeps all three private.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            if file.exists():
                file.chmod(0o600)
    except OSError as exc:
        raise ConfigError(f"cannot create the buffer {path}: {exc}") from None


def make_sinks(cfg: ReinforgeConfig, run_dir: Path) -> list[MetricSink]:
    """The metric sinks the ``monitor`` section enables.

    A sink whose package is missing is a configuration error (ConfigError, naming
    the package); sinks already opened are closed again if a later one fails.
    """
    mon = cfg.monitor
    sinks: list[MetricSink] = []
    try:
        if mon.jsonl:
            sinks.append(JsonlMetrics(run_dir / "metrics.jsonl"))
        if mon.tensorboard:
            sinks.append(TensorBoardSink(run_dir / "tensorboard"))
        params = cfg.public_dump()
        if mon.wandb.enabled:
            sinks.append(
                WandbSink(
                    run_dir,
                    mon.wandb.project or cfg.project,
                    cfg.name,
                    mon.wandb.entity,
                    mon.wandb.mode,
                    params,
                )
            )
        if mon.mlflow.enabled:
            uri = mon.mlflow.tracking_uri or (run_dir / "mlruns").resolve().as_uri()
            flat = {
                f"{section}.{k}": v
                for section, body in params.items()
                if isinstance(body, dict)
                for k, v in body.items()
            }
            sinks.append(MlflowSink(uri, mon.mlflow.experiment or cfg.project, cfg.name, flat))
    except BaseException as exc:
        for sink in sinks:
            sink.close()
        if isinstance(exc, ImportError):
            raise ConfigError(str(exc)) from exc
        raise
    return sinks


def _remote_specs(auxiliary: AuxiliaryModels | None) -> list[dict[str, Any]] | None:
    """What Ray runner actors need to rebuild the auxiliary model clients."""
    if auxiliary is None:
        return None
    try:
        return auxiliary.remote_specs()
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def make_ray_scheduler(
    cfg: ReinforgeConfig,
    engine: Any,
    model_dir: Path,
    placement: Any = None,
    auxiliary: AuxiliaryModels | None = None,
) -> Any:
    """Runner actors over the policy's vLLM replicas (``cluster.backend: ray``)."""
    from reinforge.explorer.ray_backend import PolicyState, RayScheduler

    rollout = cfg.explorer.rollout_model
    return RayScheduler(
        cfg.cluster,
        tokenizer_path=str(model_dir),
        total_concurrency=cfg.explorer.runner_concurrency,
        runner_args={
            "model_name": cfg.model.model_path,
            "default_max_tokens": cfg.model.max_response_tokens,
            "enable_history": rollout.enable_history,
            "history_shape": rollout.history_shape,
        },
        policy_state=lambda: PolicyState(*engine.policy_state()),
        setup=(load_plugins, (cfg.plugins, cfg.config_dir)),
        placement=placement,
        auxiliary_specs=_remote_specs(auxiliary),
    )


def _start_from(engine: Any, init_from: str, model_dir: Path, has_weights: bool) -> None:
    """Load ``model.init_from``'s weights into the engine, so that every command (run,
    sft, explore, eval) samples with them until a checkpoint of this run replaces them."""
    if not has_weights:
        raise ConfigError("model.init_from needs model.engine: hf or vllm (weights to load)")
    from reinforge.trainer.init_weights import init_weights

    engine.update_weights(init_weights(init_from, model_dir), version=0)


@dataclass
class RunSession:
    cfg: ReinforgeConfig
    run_dir: Path
    storage: SQLiteExperienceStorage
    explorer: Explorer
    reporter: ConsoleReporter
    model_dir: Path
    #: the run's Ray placement group (``cluster.backend: ray``): trainer ranks go there
    placement: Any = None
    #: this node's GPU plan (``cluster.backend: local``; ``reinforge.core.placement``)
    gpu_plan: Any = None
    #: what ``close`` stops first, newest first (a trainer's ranks)
    closers: list[Callable[[], None]] = field(default_factory=list)

    def on_close(self, closer: Callable[[], None]) -> None:
        """Have ``close`` call ``closer`` (before the explorer and reporter close)."""
        self.closers.append(closer)

    @classmethod
    def open(cls, cfg: ReinforgeConfig, *, with_pipeline: bool = True) -> RunSession:
        """Load the engine first (a wrong model path fails before anything is written),
        then create the run directory, the metric sinks, the buffer and the explorer.
        Whatever was opened is closed again if a later piece fails."""
        load_plugins(cfg.plugins, cfg.config_dir)
        model = cfg.model
        model_dir = (
            resolve_model_path(model.model_path, model.cache_dir)
            if model.engine in ("hf", "vllm", "openai")
            else Path(model.model_path)
        )
        ray_backend = cfg.cluster.backend == "ray"
        placement = gpu_plan = None
        if ray_backend:
            from reinforge.explorer.ray_backend import Placement, init_ray, replica_factory
            from reinforge.launcher.gpu_plan import ray_trainer_ranks

            ray = init_ray(cfg.cluster)
            parallel = cfg.trainer.parallel
            placement = Placement(
                cfg.cluster,
                model.vllm.replicas,
                trainer_ranks=ray_trainer_ranks(cfg, ray.cluster_resources().get("GPU", 0)),
                trainer_cpus=float(parallel.threads_per_rank or 1),
            )
            engine = model.create_engine(server_factory=replica_factory(cfg.cluster, placement))
        else:
            from reinforge.launcher.gpu_plan import placed_servers, run_plan

            gpu_plan = run_plan(cfg)  # vLLM replicas and trainer ranks on their own GPUs
            placed = {"server_factory": placed_servers(gpu_plan)} if gpu_plan.engines else {}
            engine = model.create_engine(**placed)
        auxiliary: AuxiliaryModels | None = None
        reporter: ConsoleReporter | None = None
        storage: SQLiteExperienceStorage | None = None
        try:
            if model.init_from:
                _start_from(engine, model.init_from, model_dir, model.has_weights)
            auxiliary = AuxiliaryModels.from_configs(cfg.explorer.auxiliary_models, engine)
            run_dir = cfg.resolved_run_dir
            try:
                run_dir.mkdir(parents=True, exist_ok=True)
                run_dir.chmod(0o700)  # prompts, rewards, weights: the owner's only
            except OSError as exc:
                raise ConfigError(f"cannot create the run directory {run_dir}: {exc}") from None
            write_private(run_dir / "config.json", json.dumps(cfg.public_dump(), indent=2))
            reporter = ConsoleReporter(
                progress=cfg.monitor.progress, sinks=make_sinks(cfg, run_dir)
            )
            private_buffer(cfg.storage_path)
            storage = SQLiteExperienceStorage(cfg.storage_path)
            pipe_cfg = cfg.buffer.experience_pipeline
            pipeline = (
                ExperiencePipeline(
                    [op.model_dump() for op in pipe_cfg.operators],
                    auxiliary.for_operators(),
                    on_error=pipe_cfg.on_error,
                )
                if with_pipeline and pipe_cfg.operators
                else None
            )
            scheduler = (
                make_ray_scheduler(cfg, engine, model_dir, placement, auxiliary)
                if ray_backend
                else None
            )
            explorer = Explorer(
                engine,
                buffer=cfg.buffer,
                explorer=cfg.explorer,
                storage=storage,
                model_name=model.model_path,
                max_response_tokens=model.max_response_tokens,
                config_dir=cfg.config_dir,
                reporter=reporter,
                pipeline=pipeline,
                scheduler=scheduler,
                auxiliary=auxiliary,
            )
        except BaseException:
            if auxiliary is not None:
                auxiliary.close()
            engine.close()
            if storage is not None:
                storage.close()
            if reporter is not None:
                reporter.close()
            raise
        return cls(
            cfg,
            run_dir,
            storage,
            explorer,
            reporter,
            model_dir,
            placement=placement,
            gpu_plan=gpu_plan,
        )

    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        """Await ``work()`` (a mode, an explore or eval pass) between the experience
        pipeline's ``prepare()`` and ``close()``: each called once per run, on every
        operator, in order; ``close()`` also after an error or an interrupt."""
        pipeline = self.explorer.pipeline
        if pipeline is None:
            return await work()
        try:
            await pipeline.prepare()
            return await work()
        finally:
            await pipeline.close()

    def close(self) -> None:
        while self.closers:
            self.closers.pop()()
        self.explorer.close()
        self.reporter.close()
        if self.cfg.cluster.backend == "ray":
            import ray

            ray.shutdown()
