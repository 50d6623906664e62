"""The update phase of one GRPO step on the demo model: one process against 2 ranks (DDP
and FSDP2 on gloo), side by side in one run, and what each rank holds.

    .venv/bin/python bench/trainer_ranks.py [--model smollm2-135m-instruct] [--steps 3]

Every configuration trains the same batch (64 synthetic rollouts of the demo's shape:
~40 prompt and ~12 response tokens) for ``--steps`` steps after one warm-up step; it
prints the median step time, and for each rank the bytes of its parameters, gradients
and AdamW state (FSDP2's target: at most 60% of the one process's on 2 ranks). On a
2-core CPU the ranks share the cores (one thread each), so expect no speed-up there.
``--only single`` times the one-process path alone (to compare two commits with
``PYTHONPATH=OTHER/src``).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch

from reinforge.core import Experience
from reinforge.core.eid import EID
from reinforge.models.catalog import resolve_model_path
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig


def batch(seed: int = 0) -> list[Experience]:
    """8 groups of 8 rollouts with the demo's lengths and a reward spread in each group."""
    generator = torch.Generator().manual_seed(seed)
    out = []
    for i in range(64):
        task, run = divmod(i, 8)
        prompt = 36 + int(torch.randint(0, 8, (1,), generator=generator))
        response = 6 + int(torch.randint(0, 12, (1,), generator=generator))
        tokens = torch.randint(10, 40000, (prompt + response,), generator=generator)
        exp = Experience(
            tokens=tokens,
            prompt_length=prompt,
            logprobs=-torch.rand(response, generator=generator),
            reward=float(run % 2),
        )
        exp.eid = EID(batch=1, task=task, run=run)
        out.append(exp)
    return out


def config(world_size: int, strategy: str) -> TrainerConfig:
    data = {
        "algorithm": "grpo",
        "algorithm_args": {"kl_loss": "none"},
        "lr": 2e-5,
        "micro_batch_size": 8,
        "gradient_checkpointing": True,
        "mixed_precision": "auto",
    }
    if world_size > 1:  # (a commit from before trainer.parallel takes the rest too)
        data["parallel"] = {"world_size": world_size, "strategy": strategy}
    return TrainerConfig.model_validate(data)


def time_single(model: str, steps: int) -> tuple[float, int]:
    trainer = Trainer(resolve_model_path(model), config(1, "ddp"), pad_token_id=0)
    data = batch()
    times = []
    for _ in range(steps + 1):
        start = time.perf_counter()
        trainer.train_step(copy.deepcopy(data))
        times.append(time.perf_counter() - start)
    held = trainer.state_bytes() if hasattr(trainer, "state_bytes") else 0
    return statistics.median(times[1:]), held


def time_ranks(model: str, strategy: str, steps: int) -> tuple[float, list[int]]:
    from reinforge.trainer.parallel.ranked_trainer import RankedTrainer

    data = batch()
    with RankedTrainer(resolve_model_path(model), config(2, strategy), pad_token_id=0) as ranks:
        times = []
        for _ in range(steps + 1):
            start = time.perf_counter()
            ranks.train_step(copy.deepcopy(data))
            times.append(time.perf_counter() - start)
        held = ranks.state_bytes()
    return statistics.median(times[1:]), held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--only", choices=["single", "all"], default="all")
    args = parser.parse_args()
    single, single_bytes = time_single(args.model, args.steps)
    print(f"single process: step {single:.2f} s, state {single_bytes / 2**20:.0f} MiB")
    if args.only == "single":
        return
    for strategy in ("ddp", "fsdp2"):
        seconds, held = time_ranks(args.model, strategy, args.steps)
        shares = ", ".join(f"{b / 2**20:.0f} MiB ({b / single_bytes:.0%})" for b in held)
        print(
            f"2 ranks {strategy}: step {seconds:.2f} s ({seconds / single:.2f}x the single); "
            f"state per rank {shares}"
        )


if __name__ == "__main__":
    main()
