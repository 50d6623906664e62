"""FSDP2 shards what it claims to shard: on 2 gloo ranks, each rank holds at most half
of the model's trainable parameter, gradient and optimizer-state bytes, plus the
unevenness of FSDP2's dim-0 chunks (stated below). A ``fsdp2`` that built a plain
replica (DDP, or no wrapper) holds the whole model on every rank and fails this.

The ranks are two spawned processes that build the real :class:`Trainer` (the same
``strategy.wrap`` a rank process calls) and run one real step on the tiny model; each
measures its gradients just before the optimizer steps (the trainer frees them after).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from reinforge.core import Experience

WORLD = 2


def _local_bytes(t: torch.Tensor) -> int:
    from torch.distributed.tensor import DTensor

    t = t.to_local() if isinstance(t, DTensor) else t
    return t.numel() * t.element_size()


def _rank(rank: int, model_path: str, exps: list[Experience], folder: str, strategy: str) -> None:
    from reinforge.trainer.sharding.strategy import RankContext
    from reinforge.trainer.trainer import Trainer
    from reinforge.trainer.trainer_config import TrainerConfig

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"file://{folder}/rendezvous", rank=rank, world_size=WORLD
    )
    try:
        cfg = TrainerConfig.model_validate(
            {"lr": 1e-3, "micro_batch_size": 4, "parallel": {"world_size": WORLD}}
        )
        ctx = RankContext(rank, WORLD, strategy)
        trainer = Trainer(model_path, cfg, pad_token_id=0, device="cpu", rank=ctx)
        params = [p for p in trainer.model.parameters() if p.requires_grad]
        grads: list[int] = []

        def before_step(*_: Any) -> None:
            grads.append(sum(_local_bytes(p.grad) for p in params if p.grad is not None))

        trainer.optimizer.register_step_pre_hook(before_step)
        trainer.train_step(exps)
        state = [
            _local_bytes(v)
            for per_param in trainer.optimizer.state.values()
            for v in per_param.values()
            if isinstance(v, torch.Tensor)
        ]
        report = {
            "params": sum(_local_bytes(p) for p in params),
            "grads": grads[0],
            "optimizer": sum(state),
            "optimizer_tensors": len(state),
            # global shapes (a DTensor's shape is the whole parameter's)
            "full_params": sum(p.numel() * p.element_size() for p in params),
            "row_bytes": sum(p[0].numel() * p.element_size() for p in params),
        }
        Path(folder, f"rank{rank}.json").write_text(json.dumps(report))
    finally:
        dist.destroy_process_group()


def measure(model_path: Path, exps: list[Experience], folder: Path, strategy: str) -> list[dict]:
    """Each rank's report; the spawned ranks import this module by the name pytest gave
    it (``tests....``), so the repository root must be on their ``sys.path``."""
    mp.spawn(_rank, args=(str(model_path), exps, str(folder), strategy), nprocs=WORLD)
    return [json.loads((folder / f"rank{r}.json").read_text()) for r in range(WORLD)]


def test_each_fsdp2_rank_holds_a_half_of_parameters_gradients_and_optimizer_state(
    tiny_model_path: Path,
    rank_batch: list[Experience],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[3]))
    reports = measure(tiny_model_path, rank_batch[:8], tmp_path, "fsdp2")
    full = reports[0]["full_params"]
    # the stated slack: FSDP2 chunks each parameter along dim 0, so a rank holds at most
    # one row more of each than an exact 1/N; AdamW keeps two such tensors per parameter
    # (exp_avg, exp_avg_sq) and a scalar step (8 bytes at most) each
    rows = reports[0]["row_bytes"]
    assert full > 100 * rows  # the slack is small beside what sharding saves
    for report in reports:
        assert report["full_params"] == full
        assert report["params"] <= full / WORLD + rows
        assert report["grads"] <= full / WORLD + rows
        steps = report["optimizer_tensors"] // 3  # one scalar step per parameter tensor
        assert 0 < report["optimizer"] <= 2 * (full / WORLD + rows) + 8 * steps
    # the shards together are the whole model (nothing left out of the count)
    assert sum(r["params"] for r in reports) == full
    assert sum(r["grads"] for r in reports) == full
