"""A rank's error that comes from a dead peer names the dead peer (``dead_peer``).

When a rank is killed, the survivors' next collective fails at once (gloo: "Connection
reset by peer"), and that traceback can reach the driver before the driver sees the
killed process exit; the clean-clone suite once blamed rank 0 for rank 1's death. Here
the race is made certain: rank 1 has exited and rank 0 reports an error."""

from __future__ import annotations

import subprocess
import sys

import pytest

from reinforge.trainer.parallel.child_process import dead_peer
from reinforge.trainer.parallel.ranked_trainer import RankedTrainer, TrainerRankError


def _procs() -> list[subprocess.Popen]:
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    gone = subprocess.Popen([sys.executable, "-c", "raise SystemExit(9)"])
    return [alive, gone]


def test_a_dead_peer_is_found_and_a_live_one_is_not() -> None:
    procs = _procs()
    try:
        assert dead_peer(procs, 0, grace=30.0) == 1  # waits for the exit it expects
        assert dead_peer(procs, 1, grace=0.2) is None  # rank 1's own exit is not a peer's
    finally:
        procs[0].kill()
        procs[0].wait()


def test_an_error_after_a_peer_died_names_the_dead_rank_first() -> None:
    procs = _procs()
    procs[1].wait()
    trainer = object.__new__(RankedTrainer)  # the driver's side only: no ranks started
    trainer._procs, trainer._conns, trainer.world_size = procs, [], 2
    trace = "Traceback ...\nRuntimeError: [gloo] Read error: Connection reset by peer"
    with pytest.raises(TrainerRankError) as err:
        trainer._fail_raised("train_step", 0, trace)
    message = str(err.value)
    assert "rank 1 died (exit code 9), then rank 0 raised RuntimeError" in message
    assert procs[0].poll() is not None  # the survivor was stopped with the rest
