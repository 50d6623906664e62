"""What each trainer rank receives for one step: the whole step's experiences (the old
path: every rank got them all and planned the step again) against its share planned on
the driver (``StepPlanner``: a ``RankShare`` of tensors), for 1 to 8 ranks.

    .venv/bin/python bench/rank_shares.py [--rows 64] [--response 200] [--repeats 5]

No model is loaded: the step is ``--rows`` synthetic GRPO rollouts (groups of 8, a
~40-token prompt, responses of 1 to ``--response`` tokens, sampled log-probs), planned
as the demo's trainer plans it (micro-batches of 8, prompts shared). Printed per rank
count: the bytes each rank's message pickles to on each path, the tokens each rank
trains on against the step's 1/N, and the driver's planning time (median).
"""

from __future__ import annotations

import argparse
import copy
import pickle
import statistics
import time

import torch

from reinforge.algorithms import resolve_algorithm
from reinforge.core import Experience
from reinforge.core.eid import EID
from reinforge.trainer.step_planner import StepPlanner
from reinforge.trainer.trainer_config import TrainerConfig


def rollouts(rows: int, response: int, seed: int = 0) -> list[Experience]:
    """Groups of 8 rollouts of one prompt each, with a reward spread in every group."""
    generator = torch.Generator().manual_seed(seed)
    out = []
    prompts: dict[int, torch.Tensor] = {}
    for i in range(rows):
        task, run = divmod(i, 8)
        if task not in prompts:
            length = 36 + int(torch.randint(0, 8, (1,), generator=generator))
            prompts[task] = torch.randint(10, 40000, (length,), generator=generator)
        prompt = prompts[task]
        reply = 1 + int(torch.randint(0, response, (1,), generator=generator))
        tokens = torch.cat([prompt, torch.randint(10, 40000, (reply,), generator=generator)])
        exp = Experience(
            tokens=tokens,
            prompt_length=len(prompt),
            logprobs=-torch.rand(reply, generator=generator),
            reward=float(run % 2),
        )
        exp.eid = EID(batch=1, task=task, run=run)
        out.append(exp)
    return out


def size(message: object) -> int:
    return len(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--response", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    cfg = TrainerConfig.model_validate({"algorithm": "grpo", "micro_batch_size": 8})
    spec = resolve_algorithm(cfg.algorithm, cfg.algorithm_args)
    step = rollouts(args.rows, args.response)
    total = sum(len(e.tokens) for e in step)
    old = size(("train_step", (step, None)))  # what every rank received before
    print(f"{args.rows} rollouts, {total} tokens; old path: every rank received {old} B")
    for world_size in (1, 2, 4, 8):
        planner = StepPlanner(cfg, spec, pad_token_id=0, world_size=world_size)
        times, plan = [], None
        for _ in range(args.repeats):
            data = copy.deepcopy(step)
            start = time.perf_counter()
            plan = planner.plan(data, model_version=0)
            times.append(time.perf_counter() - start)
        assert plan is not None
        sent = [size(("train_step", share)) for share in plan.shares]
        tokens = [share.tokens for share in plan.shares]
        largest = max(mb.tokens for share in plan.shares for mb in share.micro_batches)
        print(
            f"{world_size} rank(s): bytes per rank {min(sent)}-{max(sent)} "
            f"({max(sent) / old:.2f}x the old path's), all ranks together {sum(sent)} "
            f"({sum(sent) / (old * world_size):.2f}x the old path's {old * world_size}); "
            f"tokens per rank {min(tokens)}-{max(tokens)} (1/N = {total / world_size:.0f}, "
            f"largest micro-batch {largest}); planning {statistics.median(times) * 1e3:.1f} ms"
        )


if __name__ == "__main__":
    main()
