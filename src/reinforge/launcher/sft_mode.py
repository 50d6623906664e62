"""``mode: sft``: supervised fine-tuning on demonstrations, through the RL trainer.

Each conversation of ``buffer.trainer_input.experience_buffer`` is one Experience
masked to its assistant turns; each step trains the ``sft`` loss on the next
``buffer.batch_size`` of them, for ``buffer.total_epochs`` epochs (or
``buffer.total_steps``). Checkpoints, metrics, plots and export are those of any run.

Resuming: a step's batch depends only on its number (``SftBatches``), so a restarted
run loads its newest checkpoint and continues with the step after it.
"""

from __future__ import annotations

from typing import Any

from reinforge.launcher.demonstrations import load_demonstrations
from reinforge.launcher.run_trainer import evaluate_run
from reinforge.launcher.session import RunSession
from reinforge.launcher.training_loop import TrainingLoop


async def run_sft(session: RunSession) -> dict[str, Any]:
    cfg, reporter = session.cfg, session.reporter
    data = cfg.buffer.trainer_input.experience_buffer
    if data is None:
        raise ValueError("mode 'sft' needs buffer.trainer_input.experience_buffer")
    batches = load_demonstrations(
        session, data, cfg.buffer.batch_size, "buffer.trainer_input.experience_buffer"
    )
    planned = batches.planned_steps(cfg.buffer.total_epochs, cfg.buffer.total_steps)
    loop = TrainingLoop(session, checkpoint_every=cfg.checkpoint.save_interval)
    reporter.rewind(loop.trained, loop.trained)  # steps logged again from here are logged once
    reporter.plan(planned, loop.trained)
    evaluated_at: int | None = None

    async def evaluate(step: int) -> None:
        nonlocal evaluated_at
        if cfg.buffer.explorer_input.eval_tasksets:
            loop.sync_engine()
            await evaluate_run(session, step)
            evaluated_at = step

    async def train_on_demonstrations() -> None:
        if cfg.explorer.eval_on_start and loop.trained == 0:
            await evaluate(0)
        while loop.trained < planned:
            step = loop.trained + 1
            batch = batches.batch(step)
            for exp in batch:  # a demonstration is never stale (trainer.max_staleness)
                exp.info["model_version"] = loop.trainer.model_version
            loop.train_step(step, batch)
            if cfg.explorer.eval_interval and step % cfg.explorer.eval_interval == 0:
                await evaluate(step)

    await loop.run(train_on_demonstrations())
    loop.save()
    if evaluated_at != loop.trained:
        await evaluate(loop.trained)
    reporter.finish()
    return {**loop.last, "steps": loop.trained}
