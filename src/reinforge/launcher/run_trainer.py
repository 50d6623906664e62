"""The trainer of a run, as every training mode (both, train, sft) sets it up and saves it.

A run's trainer resumes from the newest loadable checkpoint of its run directory;
a run with none starts from ``model.init_from`` when that is set (e.g. RL from an
SFT run), else from the base model.
"""

from __future__ import annotations

from reinforge.config import ConfigError
from reinforge.launcher.gpu_plan import ray_trainer_ranks
from reinforge.launcher.session import RunSession
from reinforge.trainer.checkpoint import CheckpointManager
from reinforge.trainer.handle import TrainerHandle
from reinforge.trainer.init_weights import init_weights, resolve_init_from
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


def make_trainer(session: RunSession) -> tuple[TrainerHandle, int]:
    """A trainer (in process, or the handle of ``trainer.parallel.world_size`` ranks),
    restored from the newest loadable checkpoint; returns it and its last trained step.
    The session stops the trainer's ranks when it closes."""
    cfg = session.cfg
    if not cfg.model.has_weights:
        engine = cfg.model.engine
        raise ConfigError(
            f"training needs model.engine: hf or vllm (the {engine} engine has no weights)"
        )
    checkpoints = run_checkpoints(session)
    # model.init_from applies to a run with no checkpoint yet; the trainer loads it
    # before its ranks split the model
    start_from = None
    if cfg.model.init_from and not checkpoints.list():
        start_from = resolve_init_from(cfg.model.init_from)
    pad = session.explorer.engine.tokenizer.pad_token_id
    parallel = cfg.trainer.parallel
    # one rank too when Ray reserved it a GPU (not the driver's unreserved cuda:0)
    ray_rank = session.placement is not None and ray_trainer_ranks(cfg, session.placement.gpus)
    if parallel.world_size > 1 or parallel.listen is not None or ray_rank:
        from reinforge.trainer.parallel.rank_start import rank_listener
        from reinforge.trainer.parallel.ranked_trainer import RankedTrainer

        listener = rank_listener(parallel)
        session.reporter.info(
            f"{'waiting for' if listener else 'starting'} {parallel.world_size} trainer ranks "
            f"({parallel.strategy}, trainer.device: {cfg.trainer.device}"
            f"{', as Ray actors' if session.placement is not None else ''}"
            f"{f', started by a launcher, on {parallel.listen}' if listener else ''})"
        )
        trainer: TrainerHandle = RankedTrainer(
            session.model_dir,
            cfg.trainer,
            pad_token_id=pad,
            init_from=start_from,
            placement=session.placement,
            plan=session.gpu_plan,
            listener=listener,
            checkpoint_folder=checkpoints.root,  # launcher ranks must see it (shared storage)
        )
    else:
        weights = init_weights(start_from, session.model_dir) if start_from else None
        trainer = Trainer(
            session.model_dir,
            cfg.trainer,
            pad_token_id=pad,
            init_weights=weights,
            device=in_process_device(session),
        )
    session.on_close(trainer.close)
    if start_from is not None:
        session.reporter.info(f"starting from the weights of {start_from} (model.init_from)")
    restored = checkpoints.load_latest(
        lambda path, state: (trainer.load_checkpoint(path, state), state)[1]
    )
    if restored is None:
        if checkpoints.list():  # never silently start over from the base weights
            raise ConfigError(
                f"none of the checkpoints in {checkpoints.root} could be loaded (see the "
                "warnings above); move them aside to train from the base model again"
            )
        return trainer, 0
    path, state = restored
    session.reporter.info(
        f"resuming the trainer from {path} (trained steps 1..{state.get('trained_step', 0)})"
    )
    return trainer, int(state.get("trained_step", 0))


def in_process_device(session: RunSession) -> str | None:
    """The device of a trainer in the run's own process: its GPU in the run's placement
    plan (not one a vLLM replica uses), or None to follow ``trainer.device``."""
    plan = session.gpu_plan
    if plan is None or not plan.ranks:
        return None
    from reinforge.trainer.parallel.rank_worker import choose_device

    return choose_device(session.cfg.trainer.device, 0, plan.rank_device(0, in_process=True))[1]


def save_run_checkpoint(session: RunSession, trainer: TrainerHandle, trained_step: int) -> None:
    if trainer.stopped:  # ranks stopped by an interrupt mid-step
        session.reporter.warn(
            "the trainer ranks were stopped in the middle of a step, so no checkpoint "
            "was saved now; the same command resumes from the last saved one"
        )
        return

    def write(folder):
        return {**trainer.save_checkpoint(folder), "trained_step": trained_step}

    run_checkpoints(session).save(trainer.global_step, write)


async def evaluate_run(session: RunSession, step: int) -> dict[str, float]:
    """The eval tasksets' metrics at ``step`` (none configured: nothing)."""
    if not session.cfg.buffer.explorer_input.eval_tasksets:
        return {}
    return await session.explorer.evaluate(step)
