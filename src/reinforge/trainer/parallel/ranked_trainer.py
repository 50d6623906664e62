"""The driver's handle on a trainer of several ranks: the same calls the launcher makes on
an in-process :class:`~reinforge.trainer.trainer.Trainer`, carried out by child
processes (``trainer.parallel.world_size`` of them) that train together.

Every command goes to every rank and has a deadline (``trainer.parallel.timeout_s``).
A rank that dies, raises or does not answer in time fails the command with
:class:`TrainerRankError` naming it (and its traceback, or exit code), and every rank
is stopped: no process outlives the run, and the same command resumes it from its
last checkpoint.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, Listener, wait
from pathlib import Path
from typing import Any

import torch

from reinforge.algorithms import TrainBatch, resolve_algorithm
from reinforge.core import Experience
from reinforge.core.placement import GpuPlan, plan_gpus, visible_gpu_count
from reinforge.trainer.parallel.child_process import RemoteRank, dead_peer, die_with_parent
from reinforge.trainer.parallel.rank_start import (
    TrainerRankError,
    free_port,
    listen_host,
    threads_per_rank,
)
from reinforge.trainer.parallel.rank_worker import (
    AUTHKEY_ENV,
    DRIVER_ENV,
    receive,
    receive_tensors,
    send,
)
from reinforge.trainer.parallel.shared_folder import FolderProbe
from reinforge.trainer.prepared_step import step_result
from reinforge.trainer.sharding import plan as rank_plan
from reinforge.trainer.step_planner import StepPlanner
from reinforge.trainer.step_result import StepResult
from reinforge.trainer.trainer_config import TrainerConfig

logger = logging.getLogger(__name__)


class RankedTrainer:
    """``world_size`` trainer ranks behind the interface of one in-process trainer.

    The ranks are processes running one entry (``rank_worker``) that reads torch's
    ``env://`` variables; this class is its front end for reinforge's own child
    processes (default), Ray actors (``placement``), or ranks a launcher started
    (``listener``: torchrun, srun, a PyTorchJob connect to it).
    """

    def __init__(
        self,
        model_path: str | Path,
        cfg: TrainerConfig,
        *,
        pad_token_id: int,
        init_from: str | Path | None = None,
        placement: Any = None,
        plan: GpuPlan | None = None,
        listener: Listener | None = None,
        checkpoint_folder: Path | None = None,
    ) -> None:
        """Start the ranks and wait until each has built its trainer. ``init_from`` is a
        folder ``model.init_from`` resolved to (each rank loads it before wrapping);
        with a Ray ``placement`` the ranks run under actors in its trainer bundles;
        ``plan`` places local ranks on GPUs (default: this node's GPUs, no engines);
        with a ``listener`` reinforge starts no ranks and waits for a launcher's, which
        must prove they see ``checkpoint_folder`` as the driver does (``shared_folder``)."""
        self.cfg = cfg
        self.world_size = cfg.parallel.world_size
        self.is_lora = cfg.lora.enabled
        self.global_step = 0
        self.model_version = 0
        self._timeout = cfg.parallel.timeout_s
        self._closed = False
        #: the driver's half of a step: plans it and sends each rank its share
        self.planner = StepPlanner(
            cfg,
            resolve_algorithm(cfg.algorithm, cfg.algorithm_args),
            pad_token_id=pad_token_id,
            world_size=self.world_size,
        )
        self.receipts: list[dict[str, Any]] = []
        # a launcher's ranks run on other machines: their threads are theirs to set
        # (torchrun's OMP_NUM_THREADS) unless threads_per_rank says
        threads = threads_per_rank(cfg) if listener is None else cfg.parallel.threads_per_rank
        self._procs: list[Any] = []
        devices: list[str | None] = [None] * self.world_size
        probe = None
        if listener is not None and checkpoint_folder is not None:
            probe = FolderProbe.create(checkpoint_folder)
        if listener is None:
            authkey = secrets.token_bytes(16)
            listener = Listener(
                ("127.0.0.1" if placement is None else listen_host(), 0), authkey=authkey
            )
            if placement is None:
                plan = plan or plan_gpus(
                    visible_gpu_count(),
                    local_ranks=self.world_size,
                    trainer_device=cfg.device,
                    share=cfg.parallel.share_gpus,
                )
                devices = [plan.rank_device(r) for r in range(self.world_size)]
            self._procs = self._start_ranks(listener, authkey, placement, plan, threads or 1)
        try:
            self._conns = self._accept(listener)
        finally:
            listener.close()
        if not self._procs:  # a launcher's ranks: seen only through their connections
            self._procs = [RemoteRank(conn) for conn in self._conns]
        for rank, conn in enumerate(self._conns):
            send(
                conn,
                {
                    "device": devices[rank],
                    "threads": threads,
                    "model_path": str(model_path),
                    "cfg_json": cfg.model_dump_json(),
                    "pad_token_id": pad_token_id,
                    "init_from": None if init_from is None else str(init_from),
                    **({"shared_folder": probe.message()} if probe else {}),
                },
            )
        #: per rank: the device it opened, its CUDA_VISIBLE_DEVICES, local rank and host
        self.ranks: list[dict[str, Any]] = self._collect("start", every=True)
        refused = probe.check([r["host"] for r in self.ranks]) if probe else None
        if refused is not None:  # a rank's marker is not where the driver reads
            self._closed = True
            self._stop_all()
            raise TrainerRankError(refused)

    def _start_ranks(
        self,
        listener: Listener,
        authkey: bytes,
        placement: Any,
        plan: GpuPlan | None,
        threads: int,
    ) -> list[Any]:
        """The rank processes: children of this process, or of Ray actors, each given
        the ``env://`` variables a launcher would set."""
        host, listen_port = listener.address
        common = {
            "WORLD_SIZE": str(self.world_size),
            DRIVER_ENV: f"{host}:{listen_port}",
            AUTHKEY_ENV: authkey.hex(),
        }
        command = [sys.executable, "-m", "reinforge.trainer.parallel.rank_worker"]
        if placement is None:
            common |= {
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(free_port()),
                "LOCAL_WORLD_SIZE": str(self.world_size),
                **(plan.rank_env() if plan is not None else {}),
            }
            return [
                subprocess.Popen(
                    command,
                    env={**os.environ, **common, "RANK": str(r), "LOCAL_RANK": str(r)},
                    stdin=subprocess.DEVNULL,
                    preexec_fn=die_with_parent,
                )
                for r in range(self.world_size)
            ]
        import ray

        from reinforge.trainer.parallel.ray_ranks import RayRankProcess, start_hosts

        hosts = start_hosts(placement, self.world_size, float(threads))
        master_host, port = ray.get(hosts[0].address.remote(), timeout=self._timeout)
        # Ray shows each rank actor its own GPU (if any) as the only one: local rank 0
        common |= {"MASTER_ADDR": master_host, "MASTER_PORT": str(port), "LOCAL_RANK": "0"}
        return [
            RayRankProcess(hosts[r], command, {**common, "RANK": str(r)})
            for r in range(self.world_size)
        ]

    # ---- the commands --------------------------------------------------------------

    def train_step(
        self,
        experiences: Sequence[Experience],
        on_micro_batch: Callable[[int, int], None] | None = None,
        demonstrations: Sequence[Experience] | None = None,
    ) -> StepResult:
        """One step: planned here (``StepPlanner``), each rank sent only its share of the
        micro-batches (tensors) to learn from; the ranks' gradients add up to the step's."""
        start = time.monotonic()
        plan = self.planner.plan(
            experiences, self.model_version, demonstrations, reference=self._reference_logprobs
        )
        if plan.skipped:
            logger.warning("train step %d skipped: no usable experiences", self.global_step + 1)
            return StepResult.skip(plan.metrics)
        replies = self._command("train_step", each=plan.shares, on_progress=on_micro_batch)
        learned, self.global_step, self.model_version, _ = replies[0]
        #: per rank, what it received for the last step: its message's bytes, the tokens
        #: of its share and the share's type (measured by the rank)
        self.receipts = [reply[3] for reply in replies]
        return step_result(plan, learned, time.monotonic() - start, self.world_size)

    def _reference_logprobs(self, batches: list[TrainBatch]) -> list[torch.Tensor]:
        """The reference's log-probs of ``batches`` (a KL penalty in the reward), each
        rank scoring its part of them (balanced by tokens, as a step's micro-batches)."""
        tokens = [int(b.attention_mask.sum()) for b in batches]
        assigned = rank_plan.assign(tokens, self.world_size)
        slots = rank_plan.slot_count(assigned)
        parts = [([batches[i] for i in mine], slots) for mine in assigned]
        replies = self._command("reference_logprobs", each=parts)
        scored: dict[int, torch.Tensor] = {}
        for mine, logprobs in zip(assigned, replies, strict=True):
            scored.update(zip(mine, logprobs, strict=True))
        return [scored[i] for i in range(len(batches))]

    def weights_for_sync(self) -> dict[str, torch.Tensor]:
        """The policy's full weights (LoRA merged), gathered from the ranks by rank 0."""
        return self._command("weights")

    def shareable_weights(self) -> None:
        """None: the ranks' parameters live in other processes."""
        return None

    def weight_buckets(self, bucket_bytes: int) -> Iterator[dict[str, torch.Tensor]]:
        """The policy's weights for an engine in buckets of at most ``bucket_bytes``
        (``weight_stream``): rank 0 sends each bucket as its own message while the
        ranks gather the next, so this process holds about one bucket at a time.

        Left before its end (the engine failed), the rest is read and dropped so the
        ranks finish the command and stay usable; Ctrl-C stops them, as in a step."""
        name = "weight_buckets"
        for rank, conn in enumerate(self._conns if not self._closed else []):
            try:
                send(conn, (name, int(bucket_bytes)))
            except OSError as exc:
                self._fail(name, f"rank {rank} cannot be reached ({exc}){self._exit_note(rank)}")
        if self._closed:
            raise TrainerRankError(f"the trainer ranks are stopped; cannot run {name!r}")
        done = False
        try:
            while (bucket := self._next_bucket(name)) is not None:
                yield bucket
                del bucket
            done = True
        except KeyboardInterrupt:
            self._closed = True
            self._stop_all()
            raise
        finally:
            if not self._closed:
                while not done and self._next_bucket(name) is not None:
                    pass  # drain what rank 0 still sends, so the command ends cleanly
                self._collect(name)

    def _next_bucket(self, name: str) -> dict[str, torch.Tensor] | None:
        """Rank 0's next ``("bucket", ...)`` message; None at its end marker."""
        deadline = time.monotonic() + self._timeout
        conn = self._conns[0]
        while not conn.poll(0.5):
            dead = [r for r, p in enumerate(self._procs) if p.poll() is not None]
            if dead:
                self._fail(name, f"rank(s) {dead} died{self._exit_note(dead[0])}")
            if time.monotonic() > deadline:
                self._fail(name, f"rank 0 sent no weights within {self._timeout:g} s")
        try:
            kind, value = receive(conn)
        except (EOFError, OSError):
            self._fail(name, f"rank 0 died{self._exit_note(0)}")
        if kind == "error":
            self._fail_raised(name, 0, value)
        if kind != "bucket":
            self._fail(name, f"rank 0 answered {kind!r} before its last bucket")
        return None if value is None else receive_tensors(conn, value)

    def probe_logprobs(self, ids: list[int]) -> list[float]:
        """log p(ids[i] | ids[:i]) for i >= 1 under the ranks' policy, as the weight check
        after a sync asks it (``sync_check``): every rank runs the forward, rank 0 answers."""
        return self._command("probe_logprobs", list(ids))

    def save_adapter(self, folder: str | Path) -> None:
        from reinforge.trainer.parallel.ray_ranks import receive_checkpoint

        self._command("save_adapter", str(folder))
        receive_checkpoint(self._procs, Path(folder), self._timeout)  # Ray ranks' files

    def save_checkpoint(self, folder: Path) -> dict[str, Any]:
        from reinforge.trainer.parallel.ray_ranks import receive_checkpoint

        result = self._command("save", str(folder))
        receive_checkpoint(self._procs, Path(folder), self._timeout)  # Ray ranks' files
        return result

    def load_checkpoint(self, folder: Path, state: dict[str, Any]) -> None:
        from reinforge.trainer.parallel.ray_ranks import discard_checkpoint, send_checkpoint

        send_checkpoint(self._procs, Path(folder), self._timeout)  # to Ray ranks' nodes
        try:
            self.global_step, self.model_version = self._command("load", (str(folder), state))
        finally:
            if not self._closed:
                discard_checkpoint(self._procs, Path(folder), self._timeout)

    def state_bytes(self) -> list[int]:
        """Each rank's bytes of parameters, gradients and optimizer state."""
        return self._command("state_bytes")

    def close(self) -> None:
        """Stop the ranks (asked first, then terminated); safe to call twice."""
        if self._closed:
            return
        self._closed = True
        for conn in self._conns:
            with contextlib.suppress(OSError):
                send(conn, ("close", None))
        deadline = time.monotonic() + 10.0
        for proc in self._procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.0, deadline - time.monotonic()))
        self._stop_all()

    def __enter__(self) -> RankedTrainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- plumbing ------------------------------------------------------------------

    def _accept(self, listener: Listener) -> list[Connection]:
        """Each rank's connection, in rank order; fails if a rank exits or none calls
        within the deadline."""
        found: dict[int, Connection] = {}
        wrong: list[tuple[int, int]] = []

        def accept() -> None:
            while len(found) < self.world_size:
                conn = listener.accept()
                _kind, (rank, world_size) = receive(conn)
                if world_size != self.world_size or not 0 <= rank < world_size:
                    send(conn, ("close", None))
                    conn.close()
                    wrong.append((rank, world_size))
                    return
                if rank in found:  # two ranks with one RANK: a launcher's mix-up
                    wrong.append((rank, world_size))
                    return
                found[int(rank)] = conn

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        deadline = time.monotonic() + self._timeout
        while True:
            thread.join(0.2)
            dead = [r for r, p in enumerate(self._procs) if p.poll() is not None and r not in found]
            if wrong:
                self._conns = list(found.values())
                rank, size = wrong[0]
                why = (
                    f"two ranks said they are RANK={rank}"
                    if rank in found and size == self.world_size
                    else f"a rank said it is RANK={rank} of WORLD_SIZE={size}, but "
                    f"trainer.parallel.world_size is {self.world_size}"
                )
                self._fail("start", why)
            if dead or time.monotonic() > deadline:
                self._conns = list(found.values())
                why = "exited" if dead else "did not connect in time"
                self._fail("start", f"rank(s) {dead or 'all'} {why}")
            if not thread.is_alive():
                break
        return [found[r] for r in range(self.world_size)]

    def _command(
        self,
        name: str,
        args: Any = None,
        on_progress: Callable[[int, int], None] | None = None,
        each: Sequence[Any] | None = None,
    ) -> Any:
        """Send ``name`` to every rank and wait for all replies; rank 0's result. With
        ``each``, rank ``r`` gets ``each[r]`` as its arguments and the result is every
        rank's reply, in rank order."""
        if self._closed:
            raise TrainerRankError(f"the trainer ranks are stopped; cannot run {name!r}")
        for rank, conn in enumerate(self._conns):
            try:
                send(conn, (name, args if each is None else each[rank]))
            except OSError as exc:
                self._fail(name, f"rank {rank} cannot be reached ({exc}){self._exit_note(rank)}")
        return self._collect(name, on_progress, every=each is not None)

    @property
    def stopped(self) -> bool:
        """The ranks were stopped (closed, failed, or interrupted mid-command)."""
        return self._closed

    def _collect(
        self,
        name: str,
        on_progress: Callable[[int, int], None] | None = None,
        every: bool = False,
    ) -> Any:
        """Every rank's reply to ``name``; rank 0's result. Interrupted (Ctrl-C, SIGTERM)
        while the ranks work, it stops them: a step they finish unseen would leave
        their weights a step ahead of what the run records as trained."""
        try:
            replies = self._replies(name, on_progress)
            return [replies[r] for r in range(self.world_size)] if every else replies.get(0)
        except KeyboardInterrupt:
            self._closed = True
            self._stop_all()
            raise

    def _replies(self, name: str, on_progress: Callable[[int, int], None] | None) -> dict[int, Any]:
        deadline = time.monotonic() + self._timeout
        replies: dict[int, Any] = {}
        waiting = dict(enumerate(self._conns))
        while waiting:
            ready = wait(list(waiting.values()), timeout=0.5)
            for conn in ready:
                rank = next(r for r, c in waiting.items() if c is conn)
                try:
                    kind, value = receive(conn)
                except (EOFError, OSError):
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        self._procs[rank].wait(2.0)
                    self._fail(name, f"rank {rank} died{self._exit_note(rank)}")
                if kind == "progress":
                    if on_progress is not None:
                        on_progress(*value)
                    continue
                if kind == "refused":  # no resume helps: the rank cannot work where it is
                    self._closed = True
                    self._stop_all()
                    raise TrainerRankError(value)
                if kind == "error":
                    self._fail_raised(name, rank, value)
                replies[rank] = value
                del waiting[rank]
            for rank in list(waiting):
                if self._procs[rank].poll() is not None and not self._conns[rank].poll():
                    self._fail(name, f"rank {rank} died{self._exit_note(rank)}")
            if waiting and time.monotonic() > deadline:
                late = ", ".join(str(r) for r in sorted(waiting))
                self._fail(
                    name,
                    f"rank(s) {late} did not answer within trainer.parallel.timeout_s "
                    f"({self._timeout:g} s)",
                )
        return replies

    def _exit_note(self, rank: int) -> str:
        code = self._procs[rank].poll()
        return "" if code is None else f" (exit code {code})"

    def _fail_raised(self, name: str, rank: int, value: str) -> None:
        """``rank`` sent a traceback; a peer found dead is named first, as its cause."""
        why = f"rank {rank} raised " + (value.strip().splitlines() or ["an error"])[-1]
        peer = dead_peer(self._procs, rank)
        if peer is not None:
            why = f"rank {peer} died{self._exit_note(peer)}, then {why}"
        self._fail(name, why, detail=value)

    def _fail(self, name: str, why: str, detail: str = "") -> None:
        self._closed = True
        self._stop_all()
        raise TrainerRankError(
            f"trainer {name!r} failed: {why}; all {self.world_size} trainer ranks were "
            "stopped: run the same command again to resume from the last checkpoint",
            detail,
        )

    def _stop_all(self) -> None:
        for proc in self._procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(5.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5.0)
        for conn in getattr(self, "_conns", []):
            conn.close()
