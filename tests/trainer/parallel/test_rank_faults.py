"""A trainer rank that dies or hangs fails the command within its deadline, naming the
rank, and leaves no rank process behind."""

from __future__ import annotations

import copy
import os
import signal
from pathlib import Path

import pytest

from reinforge.core import Experience
from reinforge.trainer.parallel.ranked_trainer import RankedTrainer, TrainerRankError
from reinforge.trainer.trainer_config import TrainerConfig


def ranked(path: Path) -> RankedTrainer:
    cfg = TrainerConfig.model_validate(
        {"lr": 1e-3, "parallel": {"world_size": 2, "strategy": "ddp", "timeout_s": 300}}
    )
    return RankedTrainer(path, cfg, pad_token_id=0)


def all_gone(trainer: RankedTrainer) -> bool:
    return all(proc.poll() is not None for proc in trainer._procs)


def test_a_killed_rank_fails_the_step_naming_it(
    tiny_model_path: Path, rank_batch: list[Experience]
) -> None:
    trainer = ranked(tiny_model_path)
    try:
        trainer.train_step(copy.deepcopy(rank_batch))
        os.kill(trainer._procs[1].pid, signal.SIGKILL)
        with pytest.raises(TrainerRankError, match=r"rank 1 died \(exit code -9\)") as err:
            trainer.train_step(copy.deepcopy(rank_batch))
        assert "run the same command again to resume" in str(err.value)
        assert all_gone(trainer)
        with pytest.raises(TrainerRankError, match="stopped"):
            trainer.weights_for_sync()
    finally:
        trainer.close()


def test_a_hung_rank_fails_the_step_at_the_deadline(
    tiny_model_path: Path, rank_batch: list[Experience]
) -> None:
    trainer = ranked(tiny_model_path)
    try:
        trainer._timeout = 3.0
        os.kill(trainer._procs[1].pid, signal.SIGSTOP)  # alive, never answers
        with pytest.raises(TrainerRankError, match=r"rank\(s\) .*1 did not answer within"):
            trainer.train_step(copy.deepcopy(rank_batch))
        assert all_gone(trainer)
    finally:
        trainer.close()


def test_an_interrupt_mid_step_stops_the_ranks(
    tiny_model_path: Path, rank_batch: list[Experience]
) -> None:
    """Ctrl-C while the ranks work: they are stopped (a step finished unseen would put
    their weights ahead of the run's record), and the handle says so."""
    import threading

    # a suite started in the background (`make test &`) starts with SIGINT ignored;
    # `reinforge run` installs Python's handler then (cli/common.py), and so does this
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    trainer = ranked(tiny_model_path)
    try:
        os.kill(trainer._procs[1].pid, signal.SIGSTOP)  # the step cannot finish
        threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
        with pytest.raises(KeyboardInterrupt):
            trainer.train_step(copy.deepcopy(rank_batch))
        assert trainer.stopped and all_gone(trainer)
    finally:
        trainer.close()
        signal.signal(signal.SIGINT, previous)
