"""The run modes of ``reinforge run``.

* ``both``: explore a step, train on it, sync weights in process, repeat (with
  ``synchronizer.overlap`` the training of step k runs while step k + offset is
  explored).
* ``explore``: only explore; load newer weights from the trainer's checkpoints.
* ``train``: only train, on the steps an ``explore`` process stores in the shared
  buffer; publish weights as checkpoints.
* ``bench``: evaluate every saved checkpoint on the eval tasksets.

Resuming: the explorer's taskset cursor is stored with each step's experiences,
the trainer's position (last trained step) with each checkpoint. A restarted run
continues exploring after the last stored step and trains every stored step it has
not trained yet, so a kill at any moment loses no stored experience and skips no
task.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from reinforge.algorithms import resolve_algorithm
from reinforge.config import ConfigError, ReinforgeConfig
from reinforge.core.explore_metric_names import (
    EXPLORE_EXPERIENCES,
    EXPLORE_FAILED_TASKS,
    EXPLORE_MASKED_EXPERIENCES,
    EXPLORE_MASKED_PREFIX,
    EXPLORE_STORED,
    EXPLORE_TASKS,
    dropped_metric,
)
from reinforge.launcher.demonstrations import load_aux_demonstrations
from reinforge.launcher.run_trainer import RunInterrupted, evaluate_run, run_checkpoints
from reinforge.launcher.session import RunSession
from reinforge.launcher.sft_mode import run_sft
from reinforge.launcher.training_loop import TrainingLoop
from reinforge.trainer.checkpoint import policy_weights, read_state
from reinforge.trainer.weight_sync import CheckpointWeightSource, sync_in_process

logger = logging.getLogger(__name__)

EXPLORER_DONE = "explorer_done"


def check_mode(cfg: ReinforgeConfig) -> None:
    """Refuse a config its mode cannot run, before any model is loaded (ConfigError).

    An unknown algorithm name raises the registry's error, which lists the known ones.
    """
    mode = cfg.mode
    trains = mode in ("both", "train", "sft")
    if (trains or mode == "bench") and not cfg.model.has_weights:
        what = "training" if trains else "evaluating checkpoints"
        raise ConfigError(
            f"mode '{mode}': {what} needs model.engine: hf or vllm "
            f"(the {cfg.model.engine} engine has no weights reinforge can update)"
        )
    if cfg.cluster.backend == "ray" and cfg.model.engine != "vllm":
        raise ConfigError(
            "cluster.backend: ray needs model.engine: vllm (runner actors reach the policy's "
            f"vLLM replicas over HTTP; the {cfg.model.engine} engine lives in one process)"
        )
    if trains:
        try:
            resolve_algorithm(cfg.trainer.algorithm, cfg.trainer.algorithm_args)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"trainer.algorithm: {exc}") from exc
    if mode == "sft" and cfg.buffer.trainer_input.experience_buffer is None:
        raise ConfigError(
            "mode 'sft' needs buffer.trainer_input.experience_buffer (the demonstrations)"
        )
    if mode == "sft" and cfg.trainer.sft_aux is not None:
        raise ConfigError(
            "trainer.sft_aux mixes demonstrations into RL steps; mode 'sft' trains on "
            "buffer.trainer_input.experience_buffer alone (remove trainer.sft_aux)"
        )
    if mode in ("both", "explore", "train") and cfg.buffer.explorer_input.taskset is None:
        raise ConfigError(f"mode '{mode}' needs buffer.explorer_input.taskset")
    if mode == "bench" and not cfg.buffer.explorer_input.eval_tasksets:
        raise ConfigError("mode 'bench' needs buffer.explorer_input.eval_tasksets")


class NothingTrainedError(ConfigError):
    """Every training step of a run was skipped: exiting 0 would hide a broken setup."""


# why a known operator drops experiences, for the message of a run that trained nothing
_DROP_REASONS = {
    "reward_std_filter": "every group, as all rewards in each group were equal",
    "invalid_reward_filter": "every experience, as none had a finite reward",
    "reward_filter": "every experience, as no reward reached its threshold",
}


class ExploredTotals:
    """Sums of the explore step metrics of one invocation, to say why nothing trained."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}

    def add(self, metrics: dict[str, Any]) -> None:
        for key, value in metrics.items():
            if key != "step" and isinstance(value, int | float):
                self.totals[key] = self.totals.get(key, 0.0) + float(value)

    def cause(self, operators: list[str]) -> str:
        """The most specific reason the metrics give for no experience being kept."""
        get = self.totals.get
        tasks, failed = int(get(EXPLORE_TASKS, 0)), int(get(EXPLORE_FAILED_TASKS, 0))
        if tasks and failed == tasks:
            return f"every task failed ({failed} of {tasks}; see the warnings above)"
        if tasks and not get(EXPLORE_EXPERIENCES, 0):
            return f"the workflows returned no experience for any of the {tasks} tasks"
        masked = int(get(EXPLORE_MASKED_EXPERIENCES, 0))
        if masked and masked == int(get(EXPLORE_EXPERIENCES, 0)):
            reasons = sorted(
                k.removeprefix(EXPLORE_MASKED_PREFIX)
                for k in self.totals
                if k.startswith(EXPLORE_MASKED_PREFIX)
            )
            return (
                f"every experience was masked ({masked}; reasons: {', '.join(reasons)}), "
                "e.g. its judge could not score it"
            )
        droppers = [name for name in operators if get(dropped_metric(name), 0) > 0]
        if droppers and not get(EXPLORE_STORED, 0):
            return "; ".join(
                f"{name} dropped {_DROP_REASONS.get(name, 'every experience it got')}"
                for name in droppers
            )
        listed = ", ".join(operators) or "no operators"
        return (
            f"no step kept an experience to train on (experience pipeline: {listed}; "
            "e.g. reward_std_filter drops every group whose rewards are all equal)"
        )


def _refuse_if_nothing_trained(
    cfg: ReinforgeConfig, steps: int, skipped: int, explored: ExploredTotals
) -> None:
    if steps == 0 or skipped < steps:
        return
    operators = [op.name for op in cfg.buffer.experience_pipeline.operators]
    raise NothingTrainedError(
        f"all {steps} training steps of this run were skipped: {explored.cause(operators)}. "
        "See the explore/* metrics in the run's metrics.jsonl."
    )


async def run_both(session: RunSession) -> dict[str, Any]:
    cfg = session.cfg
    explorer, storage, reporter = session.explorer, session.storage, session.reporter
    sync = cfg.synchronizer
    loop = TrainingLoop(
        session,
        sync_every=sync.sync_interval,
        checkpoint_every=cfg.checkpoint.save_interval,
        demos=load_aux_demonstrations(session),
    )
    trainer = loop.trainer
    # a step sampled from synced weights is stored only once their check passed: a
    # failed check then leaves none of its rollouts for a resumed run to train on
    explorer.before_store = loop.check.settle
    if trainer.model_version:  # (model.init_from's weights are the engine's already)
        sync_in_process(trainer, explorer.engine, loop.check, loop.transport, loop.share)
    cursor = explorer.open_taskset()
    stored = storage.read_state("explorer")
    if stored:
        cursor.restore(stored)
        reporter.info(f"resuming at step {cursor.step + 1} (steps 1..{cursor.step} are stored)")
    reporter.rewind(cursor.step, loop.trained)  # steps logged again from here are logged once
    reporter.plan(cursor.total, cursor.step)
    # (step, trainer version) of the last evaluation and its metrics
    evaluated: tuple[tuple[int, int], dict[str, float]] | None = None

    async def evaluate(step: int) -> dict[str, float]:
        nonlocal evaluated
        loop.check.settle()  # not evaluated on weights whose check is open
        metrics = await evaluate_run(session, step)
        evaluated = ((step, trainer.model_version), metrics)
        return metrics

    if cfg.explorer.eval_on_start and cursor.step == 0:
        await evaluate(0)
    explored = ExploredTotals()

    def train_until(limit: int) -> None:
        while loop.trained < limit:
            step = loop.trained + 1
            loop.train_step(step, storage.read_batch(step))

    async def explore_while_training() -> Any:
        """Explore the next step; with ``synchronizer.overlap``, train the step that is
        due meanwhile (in a worker thread: the trainer's ranks or its torch kernels
        work while the engine samples) and sync only once both are done."""
        if not sync.overlap or loop.trained + 1 > cursor.step + 1 - sync.sync_offset:
            return await explorer.explore_step(cursor)
        step = loop.trained + 1
        exps = storage.read_batch(step)
        training = asyncio.to_thread(loop.train, step, exps, progress=False)
        out, result = await asyncio.gather(explorer.explore_step(cursor), training)
        loop.finish_step(step, result)
        return out

    async def explore_and_train() -> None:
        train_until(cursor.step - sync.sync_offset)  # catch up on steps stored before a restart
        while True:
            out = await explore_while_training()
            if out is None:
                break
            explored.add(out.metrics)
            train_until(out.step - sync.sync_offset)
            if cfg.explorer.eval_interval and out.step % cfg.explorer.eval_interval == 0:
                await evaluate(out.step)
        train_until(cursor.step)

    # Ctrl-C / SIGTERM: the step in flight is abandoned (nothing of it was stored);
    # what was trained is saved, so the same command resumes here
    await loop.run(explore_and_train())
    _refuse_if_nothing_trained(cfg, loop.steps, loop.skipped, explored)
    loop.sync_engine()  # the final policy is what gets evaluated
    loop.save()
    if evaluated is not None and evaluated[0] == (cursor.step, trainer.model_version):
        final = evaluated[1]  # this policy was just evaluated at this step
    else:
        final = await evaluate(cursor.step)
    reporter.finish()
    return {**loop.last, **final, "steps": cursor.step}


async def run_explore(session: RunSession) -> dict[str, Any]:
    cfg = session.cfg
    explorer = session.explorer
    source = (
        CheckpointWeightSource(run_checkpoints(session), session.model_dir)
        if cfg.model.has_weights
        else None
    )
    cursor = explorer.open_taskset()
    stored = session.storage.read_state("explorer")
    if stored:
        cursor.restore(stored)
    session.reporter.plan(cursor.total, cursor.step)
    session.storage.write([], {EXPLORER_DONE: None})  # running (again): not done
    try:
        if cfg.explorer.eval_on_start and cursor.step == 0:
            await evaluate_run(session, 0)
        while True:
            if (
                source is not None
                and cursor.step % cfg.synchronizer.sync_interval == 0
                and source.maybe_update(explorer.engine)
            ):
                version = explorer.engine.model_version
                session.reporter.info(f"explorer loaded policy version {version}")
            out = await explorer.explore_step(cursor)
            if out is None:
                break
            if cfg.explorer.eval_interval and out.step % cfg.explorer.eval_interval == 0:
                await evaluate_run(session, out.step)
    except (KeyboardInterrupt, asyncio.CancelledError):
        # each step is stored with the cursor in one transaction: the step in
        # flight is abandoned, the same command continues after the last stored one
        session.reporter.finish()
        raise RunInterrupted(cursor.step) from None
    session.storage.write([], {EXPLORER_DONE: {"step": cursor.step, "time": time.time()}})
    session.reporter.finish()
    return {"steps": cursor.step}


def _planned_steps(session: RunSession) -> int:
    """How many steps the explorer runs under this config (taskset size, epochs, total_steps)."""
    if session.cfg.buffer.explorer_input.taskset is None:
        raise ConfigError("buffer.explorer_input.taskset is not set")
    return session.explorer.planned_steps()


def _explorer_finished(done: Any, available: int, since: float) -> bool:
    """Whether an explore process finished at step ``available`` while this trainer ran.

    A marker written before the trainer started may be left over from an earlier
    explore run that a new one is about to continue, so it does not count.
    """
    return (
        isinstance(done, dict)
        and int(done.get("step", -1)) == available
        and float(done.get("time", 0.0)) >= since
    )


async def run_train(session: RunSession, poll_seconds: float = 0.25) -> dict[str, Any]:
    """Train on the steps an explore process stores; publish a checkpoint every sync_interval steps.

    Stops once every step the config plans is trained, or when the explore process
    reports (while this one runs) that it finished with no step left to train.
    """
    cfg = session.cfg
    started = time.time()
    planned = _planned_steps(session)
    save_every = cfg.checkpoint.save_interval or cfg.synchronizer.sync_interval
    loop = TrainingLoop(
        session,
        checkpoint_every=min(cfg.synchronizer.sync_interval, save_every),
        demos=load_aux_demonstrations(session),
    )
    session.reporter.plan(planned, loop.trained)

    async def train_stored_steps() -> None:
        while True:
            stored = session.storage.read_state("explorer") or {}
            available = int(stored.get("step", 0))
            if loop.trained < available:
                step = loop.trained + 1
                loop.train_step(step, session.storage.read_batch(step))
                continue
            if loop.trained >= planned or _explorer_finished(
                session.storage.read_state(EXPLORER_DONE), available, started
            ):
                return
            session.reporter.phase(f"waiting for the explorer to store step {loop.trained + 1}")
            await asyncio.sleep(poll_seconds)

    await loop.run(train_stored_steps())
    loop.save()
    session.reporter.finish()
    return {**loop.last, "steps": loop.trained}


async def run_bench(session: RunSession) -> dict[str, Any]:
    """Evaluate every saved checkpoint (oldest first); returns the last one's metrics.

    A checkpoint whose weights cannot be loaded is skipped with a warning.
    """
    check_mode(session.cfg.model_copy(update={"mode": "bench"}))
    checkpoints = run_checkpoints(session).list()
    if not checkpoints:
        raise FileNotFoundError(f"no checkpoints in {session.cfg.checkpoint_dir}")
    results: dict[str, Any] = {}
    evaluated = 0
    for folder in checkpoints:
        try:
            state = read_state(folder)
            weights = policy_weights(folder, session.model_dir)
        except Exception as exc:
            session.reporter.warn(f"checkpoint {folder} skipped: {type(exc).__name__}: {exc}")
            continue
        session.explorer.engine.update_weights(weights, version=int(state["model_version"]))
        results = await evaluate_run(session, int(state.get("trained_step", state["step"])))
        evaluated += 1
    session.reporter.finish()
    return {**results, "checkpoints": evaluated}


MODES = {
    "both": run_both,
    "explore": run_explore,
    "train": run_train,
    "bench": run_bench,
    "sft": run_sft,
}

__all__ = ["MODES", "NothingTrainedError", "RunInterrupted", "check_mode"]
