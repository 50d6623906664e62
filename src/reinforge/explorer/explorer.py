"""The explorer loop: taskset → batches of task requests → runners → experiences → buffer.

Every task request ends in exactly one stored task record (ok, failed, timeout or
invalid, with the error message), and the experiences of successful ones are
written to the buffer after each step, so a crash loses at most the step in flight.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import reinforge.rewards  # registers the built-in reward functions
import reinforge.workflows  # noqa: F401  (registers the built-in workflows)
from reinforge.buffer import LoadedTaskset, SQLiteExperienceStorage, TaskRecord, load_taskset
from reinforge.buffer.batch_metrics import combine_batch_metrics
from reinforge.buffer.buffer_config import BufferConfig
from reinforge.buffer.pipeline import ExperiencePipeline
from reinforge.buffer.task_scheduler import build_scheduler
from reinforge.buffer.taskset_config import TasksetConfig
from reinforge.core import Experience, Task
from reinforge.core import explore_metric_names as names
from reinforge.core.explore_metric_names import PIPELINE_EMPTY_BATCH
from reinforge.explorer import daemon_executor
from reinforge.explorer.cursor import TasksetCursor
from reinforge.explorer.eval_metrics import eval_metrics
from reinforge.explorer.explorer_config import ExplorerConfig
from reinforge.explorer.messages import INVALID, TaskResult
from reinforge.explorer.reporter import Reporter
from reinforge.explorer.runner import WorkflowRunner
from reinforge.explorer.scheduler import Scheduler, make_requests
from reinforge.explorer.step_stats import (
    ExploreSummary,
    ResultStats,
    StepOutput,
    masked_metrics,
    score_of,
    step_metrics,
    task_records,
)
from reinforge.models import InferenceEngine
from reinforge.models.auxiliary import AuxiliaryModels
from reinforge.models.model_config import ModelConfig

T = TypeVar("T")


class Explorer:
    """Runs workflows over tasksets with a pool of runners and stores what they produce."""

    def __init__(
        self,
        engine: InferenceEngine,
        *,
        buffer: BufferConfig,
        explorer: ExplorerConfig,
        storage: SQLiteExperienceStorage,
        model_name: str | None = None,
        max_response_tokens: int = 256,
        config_dir: str | Path | None = None,
        reporter: Reporter | None = None,
        pipeline: ExperiencePipeline | None = None,
        scheduler: Any = None,
        auxiliary: AuxiliaryModels | None = None,
    ) -> None:
        self.engine = engine
        self.auxiliary = auxiliary
        self.pipeline = pipeline
        self._tasks: list[Task] = []
        self._taskset_name = ""
        self._taskset_open = False
        self.buffer_cfg = buffer
        self.cfg = explorer
        self.storage = storage
        self.config_dir = Path(config_dir) if config_dir else None
        self.reporter = reporter or Reporter()
        # reinforge's own storage I/O runs here, not in the loop's default executor,
        # which user code (asyncio.to_thread, run_in_executor) can fill with hung calls
        self._io_pool = ThreadPoolExecutor(1, thread_name_prefix="reinforge-explorer-io")
        #: called (in the I/O thread) before a step's experiences are stored; raising
        #: stores nothing and leaves the taskset cursor where it was. ``mode: both``
        #: waits here for the verdict of the weight check of the weights that sampled
        #: the step, so a failed check never leaves a step of theirs in the buffer.
        self.before_store: Callable[[], Any] | None = None
        if scheduler is not None:  # another backend (Ray) runs the workflows
            self.scheduler = scheduler
            return
        runners = [
            WorkflowRunner(
                engine,
                runner_id=i,
                model_name=model_name,
                default_max_tokens=max_response_tokens,
                enable_history=explorer.rollout_model.enable_history,
                history_shape=explorer.rollout_model.history_shape,
                auxiliary_models=auxiliary.clients() if auxiliary else None,
            )
            for i in range(explorer.runner_concurrency)
        ]
        self.scheduler = Scheduler(runners)

    @classmethod
    def from_config(
        cls,
        model: ModelConfig,
        buffer: BufferConfig,
        explorer: ExplorerConfig,
        storage_path: str | Path,
        *,
        config_dir: str | Path | None = None,
        reporter: Reporter | None = None,
    ) -> Explorer:
        engine = model.create_engine()
        try:
            auxiliary = AuxiliaryModels.from_configs(explorer.auxiliary_models, engine)
        except BaseException:
            engine.close()
            raise
        return cls(
            engine,
            buffer=buffer,
            explorer=explorer,
            storage=SQLiteExperienceStorage(storage_path),
            model_name=model.model_path,
            max_response_tokens=model.max_response_tokens,
            config_dir=config_dir,
            reporter=reporter,
            auxiliary=auxiliary,
        )

    def _read(self, taskset: TasksetConfig) -> LoadedTaskset:
        return load_taskset(
            taskset,
            base_dir=self.config_dir,
            default_workflow=self.cfg.default_workflow_type,
            default_reward_fn=self.cfg.default_reward_fn_type,
        )

    def _load(self, taskset: TasksetConfig) -> list[Task]:
        """The taskset's tasks, its invalid rows recorded and reported, and every
        workflow and reward name checked (an unknown one fails before any work)."""
        loaded = self._read(taskset)
        if loaded.invalid:
            self.storage.write_task_results(
                [
                    TaskRecord(
                        taskset.name, "", bad.where or str(bad.row), INVALID, bad.error, 0, 0, 0.0
                    )
                    for bad in loaded.invalid
                ]
            )
            self.reporter.warn(loaded.summary())
        for task in loaded.tasks:
            task.workflow_cls  # noqa: B018  (resolve names now: an unknown workflow fails before any work)
            task.reward_fn_cls  # noqa: B018
        return loaded.tasks

    async def _run_tasks(
        self, tasks: list[Task], taskset: str, description: str
    ) -> list[TaskResult]:
        daemon_executor.install(asyncio.get_running_loop(), stale_after=self.cfg.max_timeout)
        requests = make_requests(
            tasks,
            taskset=taskset,
            timeout=self.cfg.max_timeout,
            max_retries=self.cfg.max_retry_times,
        )
        self.reporter.start(description, len(requests))

        def on_result(result: TaskResult) -> None:
            if not result.ok:
                self.reporter.warn((result.error or result.status).splitlines()[0])
            self.reporter.task_done(result)

        return await self.scheduler.run(requests, on_result)

    def _training_taskset(self) -> TasksetConfig:
        taskset = self.buffer_cfg.explorer_input.taskset
        if taskset is None:
            raise ValueError("buffer.explorer_input.taskset is not set")
        return taskset

    def _cursor(self, num_tasks: int) -> TasksetCursor:
        return TasksetCursor(
            num_tasks=num_tasks,
            batch_size=self.buffer_cfg.batch_size,
            total_epochs=self.buffer_cfg.total_epochs,
            total_steps=self.buffer_cfg.total_steps,
        )

    def open_taskset(self) -> TasksetCursor:
        """Load the training taskset and position a cursor at its start."""
        taskset = self._training_taskset()
        self._tasks = self._load(taskset)
        self._taskset_name = taskset.name
        self._taskset_open = True
        cursor = self._cursor(len(self._tasks))
        cursor.scheduler = build_scheduler(self._tasks, taskset.data_selector)
        return cursor

    def planned_steps(self) -> int:
        """How many explore steps the training taskset takes under this config (its
        size, ``batch_size``, ``total_epochs``, ``total_steps``).

        Counted from the tasks ``open_taskset`` loaded; before that (a train-only
        process, which explores nothing) the taskset is read to count its tasks, and
        its invalid rows are neither recorded nor reported: the explore process does
        that.
        """
        if self._taskset_open:
            return self._cursor(len(self._tasks)).total
        return self._cursor(len(self._read(self._training_taskset()).tasks)).total

    async def explore_step(self, cursor: TasksetCursor) -> StepOutput | None:
        """Run the next batch of the taskset, pass it through the pipeline, store it
        and log it. Under ``explorer.dynamic_sampling`` the step explores further
        batches until the pipeline kept enough task groups.

        The experiences and the advanced cursor are stored in one transaction, and a
        stored step is always logged (an interrupt is raised after that). Returns None
        when the taskset is exhausted.
        """
        position = cursor.next_batch()
        if position is None:
            return None
        step, start, end = position
        step_start = time.monotonic()
        description = f"step {step} (epoch {cursor.epoch + 1})"
        results: list[TaskResult] = []
        exps: list[Experience] = []
        pipe_metrics: list[dict[str, Any]] = []
        batches = tasks = 0
        taken: set[int] = set()  # task positions this step read (a scheduler's exclude)
        while True:
            batches += 1
            batch = self._batch(cursor, start, end, taken)
            tasks += len(batch)
            for task in batch:
                task.batch_id = step
            label = description if batches == 1 else f"{description}, batch {batches}"
            batch_results = await self._run_tasks(batch, self._taskset_name, label)
            results += batch_results
            kept = [e for r in batch_results for e in r.experiences if e.mask_reason is None]
            if self.pipeline is not None:
                kept, metrics = await self.pipeline.process(kept)
                pipe_metrics.append(metrics)
            exps += kept
            groups = len(Experience.group_by(exps, "task"))
            more = self._more_of_step(cursor, groups, batches)
            if more is None:
                break
            start, end = more
        stats = ResultStats().add(results)
        metrics: dict[str, float] = {"step": step, **stats.metrics(names.EXPLORE_PREFIX)}
        if cursor.scheduler is not None:  # before the write: the stored state includes it
            metrics.update(cursor.scheduler.feedback(e for r in results for e in r.experiences))
        metrics.update(
            masked_metrics([e for r in results for e in r.experiences], names.EXPLORE_PREFIX)
        )
        if pipe_metrics:
            metrics.update(combine_batch_metrics(pipe_metrics))
            metrics[PIPELINE_EMPTY_BATCH] = float(not exps)
        if self.cfg.dynamic_sampling is not None:
            metrics[names.EXPLORE_BATCHES] = float(batches)
            metrics[names.EXPLORE_KEPT_GROUPS] = float(groups)
        if self.before_store is not None:
            await self._io(self.before_store)
        write = asyncio.ensure_future(
            self._io(self.storage.write, exps, {"explorer": cursor.state()}, task_records(results))
        )
        interrupt: asyncio.CancelledError | None = None
        try:
            written = await asyncio.shield(write)
        except asyncio.CancelledError as exc:
            # Ctrl-C while the step is stored: the write goes on in its thread, and a
            # step it stores must be logged now, since a resumed run starts after it
            interrupt = exc
            written = await write
        metrics[names.EXPLORE_STEP_TIME] = time.monotonic() - step_start
        metrics[names.EXPLORE_MODEL_VERSION] = self.engine.model_version
        metrics[names.EXPLORE_STORED] = written
        self.reporter.step_done(metrics)
        self.reporter.samples(step, exps)
        if interrupt is not None:
            raise interrupt
        return StepOutput(step, tasks, results, exps, metrics, stats, written)

    def _batch(self, cursor: TasksetCursor, start: int, end: int, taken: set[int]) -> list[Task]:
        """The tasks for positions ``start:end`` of the epoch: those positions themselves,
        or, under ``data_selector``, as many tasks as its scheduler picks (none twice in
        one step)."""
        if cursor.scheduler is None:
            return self._tasks[start:end]
        picked = cursor.scheduler.select(end - start, exclude=taken)
        taken.update(picked)
        return [self._tasks[i] for i in picked]

    def _more_of_step(
        self, cursor: TasksetCursor, groups: int, batches: int
    ) -> tuple[int, int] | None:
        """The next batch this step explores under dynamic sampling, or None: the step
        kept enough task ``groups``, explored ``max_batches``, or its epoch has no task
        left."""
        sampling = self.cfg.dynamic_sampling
        if sampling is None or batches >= sampling.max_batches or groups >= sampling.min_groups:
            return None
        return cursor.extend_batch()

    async def explore(self, cursor: TasksetCursor | None = None) -> ExploreSummary:
        """Run the training taskset for ``total_epochs`` (or ``total_steps``) in batches."""
        cursor = cursor or self.open_taskset()
        self.reporter.plan(cursor.total, cursor.step)
        summary = ExploreSummary()
        start = time.monotonic()
        stats = ResultStats()  # the results themselves are not kept (see ResultStats)
        while (out := await self.explore_step(cursor)) is not None:
            summary.steps += 1
            summary.tasks += out.num_tasks
            summary.experiences += out.stored
            for r in out.results:
                summary.status_counts[r.status] = summary.status_counts.get(r.status, 0) + 1
            stats.merge(out.stats)
        self.reporter.finish()
        summary.elapsed = time.monotonic() - start
        summary.metrics = stats.metrics(names.EXPLORE_PREFIX)
        return summary

    async def evaluate(self, step: int = 0) -> dict[str, float]:
        """Run every eval taskset ``repeat_times`` per task; report mean@n, std@n, best@k, worst@k."""
        metrics: dict[str, float] = {}
        for taskset in self.buffer_cfg.explorer_input.eval_tasksets:
            cfg = taskset.model_copy(update={"is_eval": True})
            tasks = self._load(cfg)
            for task in tasks:
                task.batch_id = f"eval{step}"
            results = await self._run_tasks(tasks, cfg.name, f"eval {cfg.name}")
            await self._io(self.storage.write_task_results, task_records(results))
            per_task: dict[str, list[float]] = {}
            for r in results:
                per_task.setdefault(r.task_id, []).extend(score_of(e) for e in r.experiences)
            prefix = names.eval_prefix(cfg.name)
            metrics.update(step_metrics(results, prefix))
            metrics.update(eval_metrics(per_task, prefix))
            self.reporter.step_done(
                {"step": step, **{k: v for k, v in metrics.items() if k.startswith(prefix)}}
            )
        self.reporter.finish()
        return metrics

    async def _io(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._io_pool, fn, *args)

    def close(self) -> None:
        self._io_pool.shutdown(wait=True)
        self.scheduler.close()
        if self.auxiliary is not None:
            self.auxiliary.close()
        self.engine.close()
        self.storage.close()
