"""The rank entry that every launcher starts (``python -m
reinforge.trainer.parallel.rank_worker``): without the launcher's variables it says
which are missing; started before the driver listens (a launcher does not wait for
the driver's engines), it keeps calling until the driver answers."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Listener

from reinforge.trainer.parallel.rank_worker import AUTHKEY_ENV, DRIVER_ENV, receive

ENTRY = [sys.executable, "-m", "reinforge.trainer.parallel.rank_worker"]


def rank_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    return {**env, **extra}


def test_without_the_launchers_variables_it_says_which() -> None:
    done = subprocess.run(ENTRY, env=rank_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT" in done.stderr
    assert f"{DRIVER_ENV}, {AUTHKEY_ENV} not set" in done.stderr


def test_a_rank_started_first_waits_for_the_driver() -> None:
    with socket.socket() as probe:  # a port nothing listens on yet
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    key = secrets.token_bytes(16)
    env = rank_env(
        RANK="1", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT="1",
        **{DRIVER_ENV: f"127.0.0.1:{port}", AUTHKEY_ENV: key.hex()},
    )  # fmt: skip
    rank = subprocess.Popen(
        ENTRY, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        assert rank.stderr is not None
        said = rank.stderr.readline()  # the rank called and was refused
        assert "is not listening yet; calling again" in said, said
        time.sleep(1.5)  # it calls again, is refused again
        assert rank.poll() is None
        hello: list[object] = []
        with Listener(("127.0.0.1", port), authkey=key) as listener:
            accept = threading.Thread(
                target=lambda: hello.append(receive(listener.accept())), daemon=True
            )
            accept.start()
            accept.join(120)
        assert hello == [("hello", (1, 2))]
    finally:
        rank.kill()
        rank.wait()
