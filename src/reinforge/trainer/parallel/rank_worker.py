"""The body of one trainer rank: a child process that joins the ranks' process group,
builds its :class:`~reinforge.trainer.trainer.Trainer` and runs the driver's commands.

A rank is started as ``python -m reinforge.trainer.parallel.rank_worker ADDRESS RANK``
(a fresh interpreter that imports nothing of the user's script) and connects back to
the driver's listener with the key in ``REINFORGE_RANK_AUTHKEY``; its first message
from the driver says what to build. Every rank receives every command and runs it
(the commands are collectives: a step, a weight gather, a checkpoint); rank 0's reply
carries the result. Messages are pickled by value (``pickle``; tensors included), one
command and one reply at a time, plus ``progress`` messages from rank 0 during a step.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import sys
import traceback
from datetime import timedelta
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist


def send(conn: Connection, message: Any) -> None:
    conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def receive(conn: Connection) -> Any:
    return pickle.loads(conn.recv_bytes())


def _join_group(rank: int, world_size: int, master: str, device: str, timeout_s: float) -> None:
    backend = "nccl" if device.startswith("cuda") else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(torch.device(device))
    dist.init_process_group(
        backend,
        init_method=f"tcp://{master}",
        rank=rank,
        world_size=world_size,
        timeout=timedelta(seconds=timeout_s),
    )


def _run(trainer: Any, conn: Connection, name: str, args: Any) -> Any:
    """One command on this rank; its result (what rank 0 sends back)."""
    main = trainer.rank.is_main
    if name == "train_step":
        experiences, demonstrations = args

        def progress(done: int, total: int) -> None:
            if main:
                send(conn, ("progress", (done, total)))

        result = trainer.train_step(
            experiences, on_micro_batch=progress, demonstrations=demonstrations
        )
        return result, trainer.global_step, trainer.model_version
    if name == "weights":
        weights = trainer.weights_for_sync()
        return {k: v.detach().cpu() for k, v in weights.items()} if main else None
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
        from reinforge.trainer.parallel.rank_metrics import bytes_per_rank

        return bytes_per_rank(trainer.state_bytes())
    raise ValueError(f"unknown trainer rank command {name!r}")


AUTHKEY_ENV = "REINFORGE_RANK_AUTHKEY"


def main(argv: list[str] | None = None) -> None:
    from multiprocessing.connection import Client

    address, rank = (argv or sys.argv[1:])[:2]
    host, _, port = address.rpartition(":")
    conn = Client((host, int(port)), authkey=bytes.fromhex(os.environ[AUTHKEY_ENV]))
    send(conn, ("hello", int(rank)))
    rank_main(int(rank), conn=conn, **receive(conn))


def rank_main(
    rank: int,
    *,
    world_size: int,
    master: str,
    device_rank: int,
    threads: int,
    model_path: str,
    cfg_json: str,
    pad_token_id: int,
    init_from: str | None,
    conn: Connection,
) -> None:
    """A rank's whole life: join, build the trainer, serve commands until ``close``.

    Exits with ``os._exit`` once the driver has its last reply: gloo's teardown at
    interpreter exit can abort a process whose work finished (a known torch issue),
    and nothing is left to flush by then.
    """
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format=f"[trainer rank {rank}] %(levelname)s %(name)s: %(message)s",
    )
    torch.set_num_threads(threads)
    # Ctrl-C in a terminal reaches the whole process group: the driver decides what
    # stops, and a rank interrupted inside a collective would hang the others
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        from reinforge.trainer.device import resolve_device
        from reinforge.trainer.init_weights import init_weights
        from reinforge.trainer.parallel.strategy import RankContext
        from reinforge.trainer.trainer import Trainer
        from reinforge.trainer.trainer_config import TrainerConfig

        cfg = TrainerConfig.model_validate_json(cfg_json)
        device = resolve_device(cfg.device, device_rank)
        _join_group(rank, world_size, master, device, cfg.parallel.timeout_s)
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
        send(conn, ("ok", None))
    except BaseException:
        send(conn, ("error", traceback.format_exc()))
        os._exit(1)
    while True:
        try:
            name, args = receive(conn)
        except (EOFError, OSError):  # the driver is gone
            os._exit(1)
        if name == "close":
            send(conn, ("ok", None))
            os._exit(0)
        try:
            result = _run(trainer, conn, name, args)
            send(conn, ("ok", result if rank == 0 else None))
        except BaseException:
            send(conn, ("error", traceback.format_exc()))


if __name__ == "__main__":
    main()
