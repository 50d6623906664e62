"""What the driver needs before its ranks run: the error a failing rank raises, where
the driver listens for ranks a launcher starts, and how many threads each rank gets."""

from __future__ import annotations

import os
import socket
from multiprocessing.connection import Listener

from reinforge.trainer.parallel.rank_worker import AUTHKEY_ENV
from reinforge.trainer.sharding.parallel_config import ParallelConfig
from reinforge.trainer.trainer_config import TrainerConfig


class TrainerRankError(RuntimeError):
    """A trainer rank died, failed or hung while running a command. ``summary`` says so
    in one line (what the ``reinforge`` command prints); ``detail`` holds the failing
    rank's traceback, if it raised one."""

    def __init__(self, summary: str, detail: str = "") -> None:
        super().__init__(summary + (f"\n{detail}" if detail else ""))
        self.summary = summary
        self.detail = detail


def free_port() -> int:
    """A TCP port free on this host now (the local ranks' ``MASTER_PORT``)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rank_listener(parallel: ParallelConfig) -> Listener | None:
    """Where the driver waits for ranks that a launcher starts (``trainer.parallel.listen``),
    keyed with the secret that driver and ranks share in ``$REINFORGE_RANK_AUTHKEY``."""
    if parallel.listen is None:
        return None
    key = os.environ.get(AUTHKEY_ENV, "")
    try:
        authkey = bytes.fromhex(key)
    except ValueError:
        authkey = b""
    if len(authkey) < 16:
        raise ValueError(
            f"trainer.parallel.listen needs a secret that the driver and the ranks share, "
            f"as hex in ${AUTHKEY_ENV} (at least 16 bytes): export "
            f"{AUTHKEY_ENV}=$(openssl rand -hex 16) where both start (docs/scale_out.md)"
        )
    host, _, port = parallel.listen.rpartition(":")
    return Listener((host, int(port)), authkey=authkey)


def listen_host() -> str:
    """This node's address as Ray's other nodes reach it."""
    from reinforge.trainer.parallel.ray_ranks import node_address

    return node_address()


def threads_per_rank(cfg: TrainerConfig) -> int:
    """Torch threads of each local rank: the configured number, else the cores shared."""
    if cfg.parallel.threads_per_rank:
        return cfg.parallel.threads_per_rank
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cores or 1) // cfg.parallel.world_size)
