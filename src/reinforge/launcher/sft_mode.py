"""``mode: sft``: supervised fine-tuning on demonstrations, through the RL trainer.

Each conversation of ``buffer.trainer_input.experience_buffer`` is one Experience
masked to its assistant turns; each step trains the ``sft`` loss on the next
``buffer.batch_size`` of them, for ``buffer.total_epochs`` epochs (or
``buffer.total_steps``). Checkpoints, metrics, plots and export are those of any run.

Resuming: a step's batch depends only on its number (``SftBatches``), so a restarted
run loads its newest checkpoint and continues with the step after it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from reinforge.launcher.demonstrations import load_demonstrations
from reinforge.launcher.run_trainer import (
    RunInterrupted,
    evaluate_run,
    make_trainer,
    save_run_checkpoint,
)
from reinforge.launcher.session import RunSession
from reinforge.trainer.weight_sync import sync_in_process


async def run_sft(session: RunSession) -> dict[str, Any]:
    cfg, reporter = session.cfg, session.reporter
    data = cfg.buffer.trainer_input.experience_buffer
    if data is None:
        raise ValueError("mode 'sft' needs buffer.trainer_input.experience_buffer")
    batches = load_demonstrations(
        session, data, cfg.buffer.batch_size, "buffer.trainer_input.experience_buffer"
    )
    planned = batches.planned_steps(cfg.buffer.total_epochs, cfg.buffer.total_steps)
    trainer, trained = make_trainer(session)
    engine = session.explorer.engine
    reporter.rewind(trained, trained)  # steps logged again from here are logged once
    reporter.plan(planned, trained)
    evaluated_at: int | None = None

    async def evaluate(step: int) -> None:
        nonlocal evaluated_at
        if cfg.buffer.explorer_input.eval_tasksets:
            if engine.model_version != trainer.model_version:
                sync_in_process(trainer, engine)
            await evaluate_run(session, step)
            evaluated_at = step

    if cfg.explorer.eval_on_start and trained == 0:
        await evaluate(0)
    last: dict[str, Any] = {}
    try:
        while trained < planned:
            step = trained + 1
            reporter.phase(f"training step {step}")
            label = f"training step {step}: micro-batch"
            batch = batches.batch(step)
            for exp in batch:  # a demonstration is never stale (trainer.max_staleness)
                exp.info["model_version"] = trainer.model_version
            result = trainer.train_step(
                batch,
                on_micro_batch=lambda k, n, label=label: reporter.phase(label, k, n),
            )
            trained = step
            last = {"step": step, **result.metrics}
            every = cfg.checkpoint.save_interval
            if every and step % every == 0:
                reporter.phase("saving checkpoint")
                save_run_checkpoint(session, trainer, step)
            reporter.step_done(last)
            if cfg.explorer.eval_interval and step % cfg.explorer.eval_interval == 0:
                await evaluate(step)
    except (KeyboardInterrupt, asyncio.CancelledError):
        reporter.finish()
        save_run_checkpoint(session, trainer, trained)  # the step in flight is trained again
        raise RunInterrupted(trained) from None
    save_run_checkpoint(session, trainer, trained)
    if evaluated_at != trained:
        await evaluate(trained)
    reporter.finish()
    return {**last, "steps": trained}
