"""``torchrun`` starts reinforge's trainer ranks (the one ``env://`` rank entry): two
ranks on gloo connect to a driver that listens (``trainer.parallel.listen``) and train
what one process trains. torchrun's exit code is checked too: a rank that aborted in
gloo's teardown after its last step would fail it."""

from __future__ import annotations

import copy
import subprocess
import sys
from multiprocessing.connection import Listener
from pathlib import Path

from reinforge.core import Experience
from reinforge.trainer.parallel.ranked_trainer import RankedTrainer
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

#: test_ranks.py's bound for 2 ranks against one process (float summation order)
TOLERANCE = 1e-4


def test_torchrun_ranks_train_what_one_process_trains(
    tiny_model_path: Path,
    rank_batch: list[Experience],
    rank_driver: tuple[Listener, dict[str, str]],
) -> None:
    base = {"algorithm": "grpo", "lr": 1e-3, "micro_batch_size": 3}
    parallel = {"world_size": 2, "strategy": "ddp", "timeout_s": 300, "threads_per_rank": 1}
    cfg = TrainerConfig.model_validate({**base, "parallel": parallel})
    listener, env = rank_driver
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
        "-m", "reinforge.trainer.parallel.rank_worker",
    ]  # fmt: skip
    torchrun = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL)
    try:
        with RankedTrainer(tiny_model_path, cfg, pad_token_id=0, listener=listener) as ranked:
            assert [r["local_rank"] for r in ranked.ranks] == [0, 1]
            assert [r["device"] for r in ranked.ranks] == ["cpu", "cpu"]
            for _ in range(2):
                ranked.train_step(copy.deepcopy(rank_batch))
            weights = ranked.weights_for_sync()
            assert (ranked.global_step, ranked.model_version) == (2, 2)
        assert torchrun.wait(120) == 0  # both ranks exited cleanly once closed
    finally:
        if torchrun.poll() is None:
            torchrun.kill()
            torchrun.wait()
    single = Trainer(tiny_model_path, TrainerConfig.model_validate(base), pad_token_id=0)
    start = {k: v.detach().clone() for k, v in single.weights_for_sync().items()}
    for _ in range(2):
        single.train_step(copy.deepcopy(rank_batch))
    expected = single.weights_for_sync()
    assert weights.keys() == expected.keys()
    assert max(float((weights[k] - expected[k]).abs().max()) for k in expected) < TOLERANCE
    # and both trained at all (equal weights that never moved would pass the check above)
    assert max(float((weights[k] - start[k]).abs().max()) for k in start) > 10 * TOLERANCE
