"""The body of one trainer rank: a process that joins the ranks' process group, builds
its :class:`~reinforge.trainer.trainer.Trainer` and runs the driver's commands.

One entry for every launcher: ``python -m reinforge.trainer.parallel.rank_worker``
reads torch's ``env://`` variables (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR``, ``MASTER_PORT``), so ``torchrun``, ``srun`` and a Kubeflow
PyTorchJob start it as reinforge's own child processes and Ray actors do (those two
set the variables themselves). It finds the driver at ``$REINFORGE_DRIVER``
(``host:port``) and proves itself with the key in ``$REINFORGE_RANK_AUTHKEY``; the
driver's first message says what to build. Every rank receives every command and runs
it (the commands are collectives: a step, a weight gather, a checkpoint); rank 0's
reply carries the result. A step is planned on the driver: each rank receives only
its own share of it (a ``RankShare``: tensors), never an ``Experience`` (refused
when unpickled), and every rank replies with what it received. Messages are
pickled by value (``pickle``; tensors included), one command and one reply at a time, plus ``progress`` messages from rank
0 during a step and, during a streamed weight sync, ``bucket`` messages (each a header
followed by its tensors' raw bytes, ``send_tensors``; ``None`` at the end).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import pickle
import signal
import socket
import sys
import time
import traceback
from datetime import timedelta
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from reinforge.trainer.prepared_step import RankShare


def send(conn: Connection, message: Any) -> None:
    conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def receive(conn: Connection) -> Any:
    return pickle.loads(conn.recv_bytes())


#: commands whose reply every rank sends (the others: rank 0's only)
EVERY_RANK_REPLIES = frozenset({"train_step", "reference_logprobs"})


class _CommandUnpickler(pickle.Unpickler):
    """Unpickles the driver's commands, refusing experiences: the driver plans a step and
    sends each rank tensors only (``RankShare``), so an ``Experience`` reaching a rank is
    a bug that would cost every rank the whole step's memory."""

    def find_class(self, module: str, name: str) -> Any:
        if module.startswith("reinforge.core.") and name in ("Experience", "Episode"):
            raise pickle.UnpicklingError(
                f"a trainer rank received a {name}: ranks receive tensors only (RankShare)"
            )
        return super().find_class(module, name)


def load_command(raw: bytes) -> Any:
    """A command the driver sent (see ``_CommandUnpickler``)."""
    return _CommandUnpickler(io.BytesIO(raw)).load()


def receipt(raw: bytes, args: Any) -> dict[str, Any]:
    """What a rank received for a step: the message's bytes, the tokens of its share
    (prompts included) and the share's type."""
    tokens = args.tokens if isinstance(args, RankShare) else None
    return {"bytes": len(raw), "tokens": tokens, "type": type(args).__name__}


def send_tensors(conn: Connection, tensors: dict[str, torch.Tensor]) -> None:
    """A bucket of weights as one ``("bucket", header)`` message (names, dtypes, shapes;
    a tensor under two names is sent once) and then each tensor's bytes as a message of
    its own, read from the tensor's memory: no pickled copy of the bucket is made."""
    unique: list[torch.Tensor] = []
    index: dict[int, int] = {}
    names = []
    for name, tensor in tensors.items():
        if id(tensor) not in index:
            index[id(tensor)] = len(unique)
            unique.append(tensor.detach().cpu().contiguous())
        names.append((name, index[id(tensor)]))
    specs = [(str(t.dtype).removeprefix("torch."), tuple(t.shape)) for t in unique]
    send(conn, ("bucket", {"names": names, "specs": specs}))
    for tensor in unique:
        if tensor.numel():
            conn.send_bytes(tensor.view(-1).view(torch.uint8).numpy())


def receive_tensors(conn: Connection, header: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The tensors ``send_tensors`` announced in ``header``, each read straight into its
    own new storage (``recv_bytes_into``)."""
    out: list[torch.Tensor] = []
    for dtype, shape in header["specs"]:
        tensor = torch.empty(shape, dtype=getattr(torch, dtype))
        if tensor.numel():
            conn.recv_bytes_into(tensor.view(-1).view(torch.uint8).numpy())
        out.append(tensor)
    return {name: out[i] for name, i in header["names"]}


def _join_group(rank: int, world_size: int, device: str, timeout_s: float) -> None:
    """Join the ranks' group at ``MASTER_ADDR:MASTER_PORT`` (``env://``)."""
    from reinforge.trainer.sharding.strategy import process_group_backend

    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))
    dist.init_process_group(
        process_group_backend(device),
        init_method="env://",
        rank=rank,
        world_size=world_size,
        timeout=timedelta(seconds=timeout_s),
    )


def choose_device(setting: str, local_rank: int, planned: str | None) -> tuple[str, str]:
    """The device this rank would open, and the one it computes on.

    ``planned``: the driver's placement plan for this rank (local ranks); ``None`` for
    ranks a launcher or Ray started, which follow the launchers' convention:
    ``cuda:LOCAL_RANK`` of the GPUs they see, or ``cuda:0`` where the launcher gave
    the process one GPU of its own. With ``$REINFORGE_VISIBLE_GPUS`` pretending GPUs
    on a machine without any, the tensors stay on the CPU.
    """
    from reinforge.core.placement import VISIBLE_GPUS_ENV, plan_gpus, visible_gpu_count

    if planned is None:
        gpus = visible_gpu_count()
        own = 0 if gpus == 1 else local_rank
        plan = plan_gpus(gpus, local_ranks=own + 1, trainer_device=setting)
        planned = plan.rank_device(own, in_process=True)  # it sees the node's GPUs
    pretend = os.environ.get(VISIBLE_GPUS_ENV) and not torch.cuda.is_available()
    return planned, "cpu" if pretend and planned.startswith("cuda") else planned


def _run(trainer: Any, conn: Connection, name: str, args: Any) -> Any:
    """One command on this rank; its result (what rank 0 sends back)."""
    main = trainer.rank.is_main
    if name == "train_step":
        if not isinstance(args, RankShare):
            raise TypeError(f"a rank learns from a RankShare, not {type(args).__name__}")

        def progress(done: int, total: int) -> None:
            if main:
                send(conn, ("progress", (done, total)))

        learned = trainer.learn(args, on_micro_batch=progress)
        return learned, trainer.global_step, trainer.model_version
    if name == "reference_logprobs":
        batches, slots = args  # this rank's part; each rank runs ``slots`` forwards
        scored = trainer.reference_logprobs(batches)
        trainer.learner.pair_reference_passes(slots - len(batches))
        return scored
    if name == "weights":
        weights = trainer.weights_for_sync()
        return {k: v.detach().cpu() for k, v in weights.items()} if main else None
    if name == "weight_buckets":
        # every rank runs the gathers; only rank 0's generator yields, one message each
        count = 0
        for bucket in trainer.weight_buckets(int(args)):
            send_tensors(conn, bucket)
            count += 1
            del bucket  # not held while the next one is gathered
        if main:
            send(conn, ("bucket", None))  # the end marker, before the reply
        return count
    if name == "probe_logprobs":
        from reinforge.trainer.sync_check import trainer_logprobs

        # every rank runs the forward: on sharded ranks its parameter gathers are collectives
        return trainer_logprobs(trainer, list(args))
    if name == "save_adapter":
        trainer.save_adapter(Path(args))
        return None
    if name == "save":
        return trainer.save_checkpoint(Path(args))
    if name == "load":
        folder, state = args
        trainer.load_checkpoint(Path(folder), state)
        return trainer.global_step, trainer.model_version
    if name == "state_bytes":
        from reinforge.trainer.sharding.rank_metrics import bytes_per_rank

        return bytes_per_rank(trainer.state_bytes())
    raise ValueError(f"unknown trainer rank command {name!r}")


AUTHKEY_ENV = "REINFORGE_RANK_AUTHKEY"
DRIVER_ENV = "REINFORGE_DRIVER"
DRIVER_WAIT_ENV = "REINFORGE_DRIVER_WAIT_S"
#: what a rank reads from its launcher (torch's env:// rendezvous); ``LOCAL_RANK`` too,
#: 0 when unset (one rank per container, as a PyTorchJob without torchrun starts them)
RANK_VARIABLES = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def main() -> None:
    """The rank entry: read the launcher's variables, connect to the driver, serve."""
    from multiprocessing.connection import Client

    missing = [v for v in (*RANK_VARIABLES, DRIVER_ENV, AUTHKEY_ENV) if not os.environ.get(v)]
    if missing:
        sys.exit(
            f"reinforge trainer rank: {', '.join(missing)} not set; start ranks with "
            "torchrun/srun/a PyTorchJob (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, "
            f"MASTER_PORT) and set {DRIVER_ENV}=host:port of the driver's "
            f"trainer.parallel.listen and {AUTHKEY_ENV} to its key (docs/scale_out.md)"
        )
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    host, _, port = os.environ[DRIVER_ENV].rpartition(":")
    authkey = bytes.fromhex(os.environ[AUTHKEY_ENV])
    # a launcher may start the ranks before the driver listens (it starts its engines
    # first): keep calling for $REINFORGE_DRIVER_WAIT_S seconds (default 1800)
    deadline = time.monotonic() + float(os.environ.get(DRIVER_WAIT_ENV) or 1800)
    waiting = False
    while True:
        try:
            conn = Client((host, int(port)), authkey=authkey)
            break
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            if not waiting:
                waiting = True
                print(
                    f"reinforge trainer rank {rank}: the driver at {host}:{port} is not "
                    f"listening yet; calling again until it does (${DRIVER_WAIT_ENV})",
                    file=sys.stderr,
                    flush=True,
                )
            time.sleep(1.0)
    send(conn, ("hello", (rank, world_size)))
    rank_main(
        rank,
        world_size=world_size,
        local_rank=int(os.environ.get("LOCAL_RANK") or 0),
        conn=conn,
        **receive(conn),
    )


def rank_main(
    rank: int,
    *,
    world_size: int,
    local_rank: int,
    device: str | None,
    threads: int | None,
    model_path: str,
    cfg_json: str,
    pad_token_id: int,
    init_from: str | None,
    conn: Connection,
    shared_folder: dict[str, str] | None = None,
) -> None:
    """A rank's whole life: join, build the trainer, serve commands until ``close``.
    A rank a launcher started first proves it sees the driver's ``shared_folder``
    (``shared_folder.py``), or refuses to start.

    Exits with ``os._exit`` once the driver has its last reply: gloo's teardown at
    interpreter exit can abort a process whose work finished (a known torch issue),
    and nothing is left to flush by then.
    """
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format=f"[trainer rank {rank}] %(levelname)s %(name)s: %(message)s",
    )
    if threads:
        torch.set_num_threads(threads)
    # Ctrl-C in a terminal reaches the whole process group: the driver decides what
    # stops, and a rank interrupted inside a collective would hang the others
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        from reinforge.trainer.parallel.shared_folder import rank_sees

        refused = rank_sees(shared_folder, rank)
        if refused is not None:  # its shards would land where the driver cannot see them
            send(conn, ("refused", refused))
            os._exit(1)
        from reinforge.trainer.device import resolve_device
        from reinforge.trainer.init_weights import init_weights
        from reinforge.trainer.sharding.strategy import RankContext
        from reinforge.trainer.trainer import Trainer
        from reinforge.trainer.trainer_config import TrainerConfig

        cfg = TrainerConfig.model_validate_json(cfg_json)
        planned, device = choose_device(cfg.device, local_rank, device)
        device = resolve_device(device)
        _join_group(rank, world_size, device, cfg.parallel.timeout_s)
        ctx = RankContext(rank, world_size, cfg.parallel.strategy, cfg.parallel.cpu_offload)
        weights = init_weights(init_from, model_path) if init_from else None
        trainer = Trainer(
            model_path,
            cfg,
            pad_token_id=pad_token_id,
            device=device,
            rank=ctx,
            init_weights=weights,
        )
        where = {
            "device": planned,
            "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "local_rank": local_rank,
            "host": socket.gethostname(),
            # which physical GPU it is, whatever index this process sees it at
            "gpu_uuid": str(torch.cuda.get_device_properties(device).uuid)
            if device.startswith("cuda")
            else None,
        }
        send(conn, ("ok", where))
    except BaseException:
        send(conn, ("error", traceback.format_exc()))
        os._exit(1)
    while True:
        try:
            raw = conn.recv_bytes()
        except (EOFError, OSError):  # the driver is gone
            os._exit(1)
        try:
            name, args = load_command(raw)
        except pickle.UnpicklingError:
            send(conn, ("error", traceback.format_exc()))
            continue
        if name == "close":
            with contextlib.suppress(OSError):  # a driver that did not wait for it
                send(conn, ("ok", None))
            os._exit(0)
        try:
            result = _run(trainer, conn, name, args)
            if name == "train_step":
                result = (*result, receipt(raw, args))
            send(conn, ("ok", result if rank == 0 or name in EVERY_RANK_REPLIES else None))
        except BaseException:
            send(conn, ("error", traceback.format_exc()))


if __name__ == "__main__":
    main()
