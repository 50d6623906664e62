"""Proof, at the start of a run, that the driver and the ranks a launcher started see one
checkpoint folder.

Ranks that torchrun, srun or a PyTorchJob start write their checkpoint shards
themselves, into the folder the driver names in its ``save`` command: the folder must
be one folder on storage that every node shares, at the same path. Nothing else would
notice a node that writes its shards to a disk of its own (or a relative path that
resolves elsewhere in a rank's working directory) until a resume misses them. So the
driver writes a file with a random token into the folder and sends its path and token;
each rank reads it and leaves a marker of its own next to it, which the driver then
reads. Either half failing refuses the start with one line naming the folder, the rank
and its host. Ranks that reinforge starts on its own machine share the driver's disk,
and Ray ranks ship their shards to the driver (``ray_ranks``): neither is asked.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path

PREFIX = ".reinforge-shared-"

FIX = (
    "ranks that a launcher starts write their checkpoint shards into it themselves, so "
    "it must be one folder on storage every node shares, at the same path: put the run "
    "directory (--run-dir) on shared storage and give it as an absolute path, or use "
    "cluster.backend: ray, whose ranks send their shards to the driver (docs/scale_out.md)"
)


def refusal(folder: str, rank: int, host: str, why: str, seen_as: str | None = None) -> str:
    """The one line that refuses the start."""
    where = f" (there: {seen_as})" if seen_as and seen_as != folder else ""
    return f"trainer rank {rank} on {host} {why} in the checkpoint folder {folder}{where}; {FIX}"


@dataclass(frozen=True)
class FolderProbe:
    """The driver's half: the folder, as its ``save``/``load`` commands name it, and the
    token it wrote there."""

    folder: str
    token: str

    @classmethod
    def create(cls, folder: Path) -> FolderProbe:
        """Write a fresh token into ``folder`` (made if missing), removing what a start
        that was refused left there."""
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob(f"{PREFIX}*"):
            with contextlib.suppress(OSError):
                stale.unlink()
        probe = cls(str(folder), secrets.token_hex(16))
        (folder / f"{PREFIX}{probe.token}").write_text(probe.token)
        return probe

    def message(self) -> dict[str, str]:
        """What a rank is sent (plain data: the rank needs no class of ours to read it)."""
        return {"folder": self.folder, "token": self.token}

    def unseen(self, world_size: int) -> list[int]:
        """The ranks whose marker the driver does not find in the folder."""
        folder = Path(self.folder)
        return [r for r in range(world_size) if not (folder / _marker(self.token, r)).is_file()]

    def check(self, hosts: list[str]) -> str | None:
        """After every rank said it found the token: None if the driver finds every
        rank's marker, else the line that refuses the start (naming the first rank
        whose marker it misses: that rank found a copy of the folder, not the folder).
        The token and the markers are removed either way."""
        unseen = self.unseen(len(hosts))
        self.remove(len(hosts))
        if not unseen:
            return None
        rank = unseen[0]
        why = "wrote its marker where the driver does not find it"
        return refusal(self.folder, rank, hosts[rank], why)

    def remove(self, world_size: int) -> None:
        """Delete the token and the markers found (they have served their purpose)."""
        folder = Path(self.folder)
        for name in [f"{PREFIX}{self.token}", *(_marker(self.token, r) for r in range(world_size))]:
            with contextlib.suppress(OSError):
                (folder / name).unlink()


def _marker(token: str, rank: int) -> str:
    return f"{PREFIX}{token}.rank{rank}"


def rank_sees(probe: dict[str, str] | None, rank: int) -> str | None:
    """The rank's half: None if it finds the driver's token in the folder (and has left
    its marker there), else the line that refuses the start. The folder resolves as the
    rank's ``save`` commands will resolve it: a relative path against its working
    directory."""
    if probe is None:
        return None
    folder, token = probe["folder"], probe["token"]
    host, seen_as = socket.gethostname(), os.path.abspath(folder)
    try:
        found = (Path(folder) / f"{PREFIX}{token}").read_text()
    except OSError:
        found = None
    if found != token:
        why = "does not see the file the driver wrote"
        return refusal(folder, rank, host, why, seen_as)
    try:
        (Path(folder) / _marker(token, rank)).write_text(host)
    except OSError as exc:
        return refusal(folder, rank, host, f"cannot write ({exc.strerror})", seen_as)
    return None
