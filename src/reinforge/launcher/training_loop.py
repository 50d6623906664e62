"""One training loop for every mode that trains: ``both``, ``train`` and ``sft``.

The modes differ only in where a step's experiences come from (explored in this
process, stored by an ``explore`` process, demonstrations) and in what a trained step
does to the engine; what follows a trained step (the weight sync when due, the
checkpoint when due, the report), what a Ctrl-C saves, and the final checkpoint are
the same for all and live here once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable
from typing import Any

from reinforge.buffer.sft_batches import SftBatches
from reinforge.core import Experience
from reinforge.core.metric_names import TRAIN_SYNC_TIME
from reinforge.launcher.run_trainer import RunInterrupted, make_trainer, save_run_checkpoint
from reinforge.launcher.session import RunSession
from reinforge.trainer.step_result import StepResult
from reinforge.trainer.sync_check import SYNC_VERIFY_TIME, SYNC_VERIFY_WAIT, WeightCheck
from reinforge.trainer.weight_sync import WeightTransport, sync_in_process

logger = logging.getLogger(__name__)


class TrainingLoop:
    """The run's trainer (restored from its checkpoints) and what follows each step.

    ``sync_every``: trained steps between weight syncs into the engine of this process
    (0: the mode syncs only when it evaluates). ``checkpoint_every``: trained steps
    between checkpoints (0: only at the end and on an interrupt). ``demos``: the
    ``trainer.sft_aux`` demonstrations trained beside each step's experiences.
    """

    def __init__(
        self,
        session: RunSession,
        *,
        sync_every: int = 0,
        checkpoint_every: int = 0,
        demos: SftBatches | None = None,
    ) -> None:
        self.session = session
        self.trainer, self.trained = make_trainer(session)
        self.sync_every = sync_every
        self.checkpoint_every = checkpoint_every
        self.demos = demos
        sync = session.cfg.synchronizer
        #: the weight check after each sync (``synchronizer.verify_weights``): decided
        #: behind the sync, before the next train step (``train``), sync or evaluation
        self.check = WeightCheck(sync.verify_weights, sync.verify_tolerance, deferred=True)
        #: how a sync moves the weights (``synchronizer.weight_transport``, ``bucket_mb``)
        self.transport = WeightTransport.from_config(sync)
        #: the engine samples only between steps, each followed by a sync: it may read
        #: the trainer's own tensors (``model.hf.share_weights_with_trainer``)
        self.share = sync_every == 1 and not sync.overlap
        self.last: dict[str, Any] = {}  # the metrics of the last trained step
        self.steps = 0  # steps trained by this invocation...
        self.skipped = 0  # ...and how many of them the trainer skipped

    @property
    def engine(self) -> Any:
        return self.session.explorer.engine

    def train(
        self,
        step: int,
        exps: list[Experience],
        *,
        progress: bool = True,
        engine_idle: bool = False,
    ) -> StepResult:
        """Train stored step ``step`` on ``exps`` (none: the step is skipped).
        ``progress``: report micro-batches (not from a worker thread). ``engine_idle``:
        nothing samples during the step, so the engine's weights may be freed for it
        where a full sync follows (``_free_engine_weights``).

        First the weight check of the last sync is decided: nothing sampled from
        weights whose check is open is trained on, and the trainer's weights do not
        change while its side of the check reads them."""
        self.check.settle()
        if not exps:
            logger.warning("step %d has no stored experiences; training skipped", step)
            return StepResult.skip()
        reporter = self.session.reporter
        ranks = self.trainer.world_size
        label = f"training step {step}" + (f" on {ranks} ranks" if ranks > 1 else "")
        if engine_idle and self._free_engine_weights():
            self.engine.release_weights()
        try:
            return self.trainer.train_step(
                exps,
                on_micro_batch=(lambda k, n: reporter.phase(f"{label}: micro-batch", k, n))
                if progress
                else None,
                demonstrations=self.demos.batch(step) if self.demos is not None else None,
            )
        except BaseException:
            if self._engine_released():  # the same weights back, for what runs next
                with contextlib.suppress(Exception):
                    sync_in_process(
                        self.trainer, self.engine, transport=self.transport, share=self.share
                    )
            raise

    def _free_engine_weights(self) -> bool:
        """Whether the engine of this process drops its weights for the coming step: it
        allows it (the hf engine, ``model.hf.free_weights_while_training``) and the
        sync after the step brings every weight back (full weights, not a LoRA
        adapter, synced after every step: the sync interval is 1), and it does not read
        the trainer's tensors already (nothing of its own to free then)."""
        return (
            self.sync_every == 1
            and not getattr(self.engine, "weights_shared", False)
            and getattr(self.engine, "free_weights_while_training", False)
            and not self.trainer.is_lora
        )

    def _engine_released(self) -> bool:
        return getattr(self.engine, "weights_released", False)

    def finish_step(self, step: int, result: StepResult) -> dict[str, Any]:
        """What follows a trained step: the weight sync and the checkpoint when due, the report."""
        reporter = self.session.reporter
        metrics = {"step": step, **result.metrics}
        self.trained = step
        self.steps += 1
        self.skipped += result.skipped
        if self._engine_released() or (
            self.sync_every
            and not result.skipped
            and self.trainer.global_step % self.sync_every == 0
        ):
            reporter.phase("syncing weights")
            started = time.monotonic()
            sync_in_process(self.trainer, self.engine, self.check, self.transport, self.share)
            metrics[TRAIN_SYNC_TIME] = time.monotonic() - started - self.check.last_seconds
            if self.check.enabled:
                metrics[SYNC_VERIFY_TIME] = self.check.last_seconds
        if self.check.enabled:  # the wait at this step's start for the last sync's check
            metrics[SYNC_VERIFY_WAIT] = self.check.take_waited()
        if self.checkpoint_every and step % self.checkpoint_every == 0:
            reporter.phase("saving checkpoint")
            save_run_checkpoint(self.session, self.trainer, step)
        reporter.step_done(metrics)
        self.last = metrics
        return metrics

    def train_step(self, step: int, exps: list[Experience]) -> dict[str, Any]:
        """Train step ``step`` and finish it (nothing samples meanwhile); returns its metrics."""
        self.session.reporter.phase(f"training step {step}")
        return self.finish_step(step, self.train(step, exps, engine_idle=True))

    def sync_engine(self) -> None:
        """Bring the engine to the trainer's weights, if it is behind, and decide the
        weight check (before an evaluation, and at the run's end)."""
        if self.trainer.model_version != self.engine.model_version:
            self.session.reporter.phase("syncing weights")
            sync_in_process(self.trainer, self.engine, self.check, self.transport, self.share)
        self.check.settle()

    def save(self) -> None:
        save_run_checkpoint(self.session, self.trainer, self.trained)

    async def run(self, body: Awaitable[Any]) -> Any:
        """Await the mode's loop; on Ctrl-C or SIGTERM save what was trained (the step
        in flight is trained again on resume) and raise ``RunInterrupted``."""
        try:
            return await body
        except (KeyboardInterrupt, asyncio.CancelledError):
            self.session.reporter.finish()
            self.save()
            raise RunInterrupted(self.trained) from None
