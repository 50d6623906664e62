"""The trainer of a run, as every training mode (both, train, sft) sets it up and saves it.

A run's trainer resumes from the newest loadable checkpoint of its run directory;
a run with none starts from ``model.init_from`` when that is set (e.g. RL from an
SFT run), else from the base model.
"""

from __future__ import annotations

from reinforge.config import ConfigError
from reinforge.launcher.session import RunSession
from reinforge.trainer.checkpoint import CheckpointManager, load_trainer, save_trainer
from reinforge.trainer.init_weights import apply_init_weights, init_weights, resolve_init_from
from reinforge.trainer.trainer import Trainer


class RunInterrupted(Exception):
    """The run was interrupted (Ctrl-C, SIGTERM) after saving what it had done."""

    def __init__(self, step: int) -> None:
        super().__init__(f"interrupted at step {step}; run the same command to resume")
        self.step = step


def run_checkpoints(session: RunSession) -> CheckpointManager:
    return CheckpointManager(
        session.cfg.checkpoint_dir, session.cfg.checkpoint.max_checkpoints_to_keep
    )


def make_trainer(session: RunSession) -> tuple[Trainer, int]:
    """A trainer, restored from the newest loadable checkpoint; returns it and its last trained step."""
    if not session.cfg.model.has_weights:
        engine = session.cfg.model.engine
        raise ConfigError(
            f"training needs model.engine: hf or vllm (the {engine} engine has no weights)"
        )
    trainer = Trainer(
        session.model_dir,
        session.cfg.trainer,
        pad_token_id=session.explorer.engine.tokenizer.pad_token_id,
    )
    checkpoints = run_checkpoints(session)
    restored = checkpoints.load_latest(
        lambda path, state: (load_trainer(trainer, path, state), state)[1]
    )
    if restored is None:
        if checkpoints.list():  # never silently start over from the base weights
            raise ConfigError(
                f"none of the checkpoints in {checkpoints.root} could be loaded (see the "
                "warnings above); move them aside to train from the base model again"
            )
        init_from = session.cfg.model.init_from
        if init_from:
            folder = resolve_init_from(init_from)
            apply_init_weights(trainer, init_weights(folder, session.model_dir))
            session.reporter.info(f"starting from the weights of {folder} (model.init_from)")
        return trainer, 0
    path, state = restored
    session.reporter.info(
        f"resuming the trainer from {path} (trained steps 1..{state.get('trained_step', 0)})"
    )
    return trainer, int(state.get("trained_step", 0))


def save_run_checkpoint(session: RunSession, trainer: Trainer, trained_step: int) -> None:
    def write(folder):
        return {**save_trainer(trainer, folder), "trained_step": trained_step}

    run_checkpoints(session).save(trainer.global_step, write)


async def evaluate_run(session: RunSession, step: int) -> dict[str, float]:
    """The eval tasksets' metrics at ``step`` (none configured: nothing)."""
    if not session.cfg.buffer.explorer_input.eval_tasksets:
        return {}
    return await session.explorer.evaluate(step)
