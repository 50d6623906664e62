"""Trainer ranks as Ray actors (``cluster.backend: ray``): each rank's process runs under
an actor placed in the run's placement group, so Ray reserves its CPUs (and its GPU,
whose ``CUDA_VISIBLE_DEVICES`` the rank inherits) on whichever node it chose.

The actor only hosts: it starts the same rank process a local run starts
(``python -m reinforge.trainer.parallel.rank_worker``), which connects back to the
driver, and reports its exit code. :class:`RayRankProcess` gives the driver the
``subprocess.Popen`` calls it uses on local ranks.
"""

from __future__ import annotations

import os
import socket
import subprocess
from typing import Any


def node_address() -> str:
    """The address other nodes reach this one at; the loopback on a one-node cluster,
    where everything stays on this machine."""
    import ray

    if len([n for n in ray.nodes() if n.get("Alive")]) <= 1:
        return "127.0.0.1"
    return ray.util.get_node_ip_address()


class RankHost:
    """The actor behind one trainer rank."""

    def address(self) -> tuple[str, int]:
        """This node's address and a free port on it (rank 0 hosts the rendezvous)."""
        host = node_address()
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        return host, port

    def run(self, command: list[str], env: dict[str, str]) -> int:
        """Run the rank's process to its end; its exit code."""
        from reinforge.trainer.parallel.child_process import die_with_parent

        proc = subprocess.Popen(
            command,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
        )
        return proc.wait()


class RayRankProcess:
    """A rank started through a :class:`RankHost` actor, seen as a process."""

    def __init__(self, actor: Any, command: list[str], env: dict[str, str]) -> None:
        self.actor = actor
        self.done = actor.run.remote(command, env)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        import ray

        if self.returncode is None:
            ready, _ = ray.wait([self.done], timeout=0)
            if ready:
                try:
                    self.returncode = int(ray.get(self.done))
                except Exception:  # the actor itself died
                    self.returncode = -9
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        import ray

        ready, _ = ray.wait([self.done], timeout=timeout)
        if not ready:
            raise subprocess.TimeoutExpired("trainer rank actor", timeout or 0)
        return int(self.poll() or 0)

    def terminate(self) -> None:
        import ray

        ray.kill(self.actor, no_restart=True)

    kill = terminate


def start_hosts(placement: Any, world_size: int, cpus: float) -> list[Any]:
    """One :class:`RankHost` actor per rank, each in its bundle of ``placement``."""
    import ray

    host = ray.remote(RankHost)
    return [
        host.options(num_cpus=cpus, max_restarts=0, **placement.trainer_rank(rank)).remote()
        for rank in range(world_size)
    ]
