"""Two torchrun agents, as two nodes of a Slurm job start them: ``--nnodes 2`` with a
c10d rendezvous, and a different ``--nproc-per-node`` on each (1 and 2), as
``examples/distributed/slurm.sbatch`` does (3 ranks on the node that hosts vLLM, 4 on
the other). torchrun gives the 3 ranks one ``RANK`` each (0..2, numbered node by node),
``WORLD_SIZE=3`` and each node's own ``LOCAL_RANK``; they connect to a driver that
listens, prove they see its checkpoint folder, and train what one process trains.
"""

from __future__ import annotations

import copy
import socket
import subprocess
import sys
from multiprocessing.connection import Listener
from pathlib import Path

import pytest

from reinforge.core import Experience
from reinforge.trainer.parallel.ranked_trainer import RankedTrainer
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

TOLERANCE = 1e-4  # as test_torchrun.py: float summation order differs between ranks


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def agent(node_rank: int, nproc: int, rdzv_port: int, env: dict[str, str]) -> subprocess.Popen:
    """One node's torchrun: joins the 2-node rendezvous and starts ``nproc`` ranks."""
    command = [
        sys.executable, "-m", "torch.distributed.run",
        "--nnodes", "2", "--node-rank", str(node_rank), "--nproc-per-node", str(nproc),
        "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{rdzv_port}",
        "--rdzv-id", "reinforge-two-agents", "--master-addr", "127.0.0.1",
        "-m", "reinforge.trainer.parallel.rank_worker",
    ]  # fmt: skip
    return subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL)


@pytest.mark.timeout(600)
def test_two_torchrun_agents_with_different_rank_counts(
    tiny_model_path: Path,
    rank_batch: list[Experience],
    tmp_path: Path,
    rank_driver: tuple[Listener, dict[str, str]],
) -> None:
    base = {"algorithm": "grpo", "lr": 1e-3, "micro_batch_size": 3}
    parallel = {"world_size": 3, "strategy": "ddp", "timeout_s": 300, "threads_per_rank": 1}
    cfg = TrainerConfig.model_validate({**base, "parallel": parallel})
    listener, env = rank_driver
    rdzv_port = _free_port()
    agents = [agent(0, 1, rdzv_port, env), agent(1, 2, rdzv_port, env)]
    try:
        # every rank sees the checkpoint folder (one machine): the start is not refused
        checkpoints = tmp_path / "checkpoints"
        with RankedTrainer(
            tiny_model_path, cfg, pad_token_id=0, listener=listener, checkpoint_folder=checkpoints
        ) as ranked:
            assert list(checkpoints.iterdir()) == []  # the proof's files are gone
            # ranks are numbered node by node: one agent's single rank and the other's two
            local = [r["local_rank"] for r in ranked.ranks]
            assert local in ([0, 0, 1], [0, 1, 0]), local
            for _ in range(2):
                ranked.train_step(copy.deepcopy(rank_batch))
            weights = ranked.weights_for_sync()
            assert (ranked.global_step, ranked.model_version) == (2, 2)
        assert [a.wait(120) for a in agents] == [0, 0]  # every rank exited cleanly
    finally:
        for proc in agents:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    single = Trainer(tiny_model_path, TrainerConfig.model_validate(base), pad_token_id=0)
    start = {k: v.detach().clone() for k, v in single.weights_for_sync().items()}
    for _ in range(2):
        single.train_step(copy.deepcopy(rank_batch))
    expected = single.weights_for_sync()
    assert max(float((weights[k] - expected[k]).abs().max()) for k in expected) < TOLERANCE
    assert max(float((weights[k] - start[k]).abs().max()) for k in start) > 10 * TOLERANCE
