"""Trainer ranks as Ray actors (``cluster.backend: ray``): each rank's process runs under
an actor placed in the run's placement group, so Ray reserves its CPUs (and its GPU,
whose ``CUDA_VISIBLE_DEVICES`` the rank inherits) on whichever node it chose.

The actor only hosts: it starts the same rank process a local run starts
(``python -m reinforge.trainer.parallel.rank_worker``), which connects back to the
driver, and reports its exit code. :class:`RayRankProcess` gives the driver the
``subprocess.Popen`` calls it uses on local ranks.

No filesystem is assumed shared between the nodes: a rank writes its part of a
checkpoint (its ``torch.distributed.checkpoint`` shard; rank 0 also the weights and
the scheduler) into a staging folder on its own node (``$REINFORGE_RANK_STAGING``, set
by its actor), and the driver pulls those files through the actor, one at a time, into
the checkpoint folder on its node (:func:`receive_checkpoint`). To load, the driver
pushes the checkpoint's files to every rank's staging folder first
(:func:`send_checkpoint`). The checkpoint folder is thus complete on the driver's node
alone, whichever nodes the ranks ran on.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any


def node_address() -> str:
    """The address other nodes reach this one at; the loopback on a one-node cluster,
    where everything stays on this machine."""
    import ray

    if len([n for n in ray.nodes() if n.get("Alive")]) <= 1:
        return "127.0.0.1"
    return ray.util.get_node_ip_address()


class RankHost:
    """The actor behind one trainer rank. Threaded (``max_concurrency``): the driver moves
    checkpoint files through it while :meth:`run` waits on the rank's process."""

    def __init__(self) -> None:
        #: this rank's staging folder for checkpoint files, on the actor's node
        self.staging = Path(tempfile.mkdtemp(prefix="reinforge-rank-"))

    def node_id(self) -> str:
        """The Ray node this rank runs on."""
        import ray

        return ray.get_runtime_context().get_node_id()

    def address(self) -> tuple[str, int]:
        """This node's address and a free port on it (rank 0 hosts the rendezvous)."""
        host = node_address()
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        return host, port

    def run(self, command: list[str], env: dict[str, str]) -> int:
        """Run the rank's process to its end; its exit code."""
        from reinforge.trainer.checkpoint import STAGING_ENV
        from reinforge.trainer.parallel.child_process import die_with_parent

        proc = subprocess.Popen(
            command,
            env={**os.environ, **env, STAGING_ENV: str(self.staging)},
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
        )
        try:
            return proc.wait()
        finally:
            shutil.rmtree(self.staging, ignore_errors=True)

    def files(self, name: str) -> list[str]:
        """The files the rank wrote into its staging folder ``name``, relative to it."""
        root = self.staging / name
        return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())

    def read(self, name: str, relative: str) -> bytes:
        return (self.staging / name / relative).read_bytes()

    def write(self, name: str, relative: str, data: bytes) -> None:
        path = self.staging / name / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def discard(self, name: str) -> None:
        """Delete the staging folder ``name`` (its files are on the driver's node now)."""
        shutil.rmtree(self.staging / name, ignore_errors=True)


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
                # the rank is gone: end its host too, which holds the bundle's CPUs
                # (and GPU) while the driver keeps a handle; the next ranks placed in
                # the same bundles (a resume in this process) would wait for them
                ray.kill(self.actor, no_restart=True)
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
    options = {"num_cpus": cpus, "max_restarts": 0, "max_concurrency": 4}
    return [
        host.options(**options, **placement.trainer_rank(rank)).remote()
        for rank in range(world_size)
    ]


def _actors(procs: list[Any]) -> list[Any]:
    return [p.actor for p in procs if isinstance(p, RayRankProcess)]


def receive_checkpoint(procs: list[Any], folder: Path, timeout: float) -> None:
    """Pull what each Ray rank staged for ``folder`` on its node into ``folder`` on this
    one (a no-op for local ranks, which wrote ``folder`` itself)."""
    import ray

    for actor in _actors(procs):
        for relative in ray.get(actor.files.remote(folder.name), timeout=timeout):
            path = folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(ray.get(actor.read.remote(folder.name, relative), timeout=timeout))
        ray.get(actor.discard.remote(folder.name), timeout=timeout)


def send_checkpoint(procs: list[Any], folder: Path, timeout: float) -> None:
    """Push every file of ``folder`` into each Ray rank's staging folder of the same name
    (each rank reads the whole weights, and DCP may reshard from any rank's shard)."""
    import ray

    actors = _actors(procs)
    if not actors:
        return
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = ray.put(path.read_bytes())  # one copy in the object store for all ranks
        relative = str(path.relative_to(folder))
        ray.get([a.write.remote(folder.name, relative, data) for a in actors], timeout=timeout)


def discard_checkpoint(procs: list[Any], folder: Path, timeout: float) -> None:
    """Delete what :func:`send_checkpoint` staged for ``folder`` on the ranks' nodes."""
    actors = _actors(procs)
    if not actors:  # local ranks: no Ray here (ray.get would start an instance)
        return
    import ray

    ray.get([a.discard.remote(folder.name) for a in actors], timeout=timeout)
