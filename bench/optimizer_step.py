"""One AdamW step over a model's parameters: the trainer's fused kernel against torch's
per-parameter loop (its default on the CPU), side by side in one run.

Why: the trainer asks torch for its fused AdamW wherever the parameters are on the CPU
or CUDA (``trainer/optimizer.py``); this shows what that buys on this machine. Both
sides step the same parameters with the same random gradients, built by the trainer's
own ``build_optimizer``; the settings alternate round by round so load drift hits both
alike. Each timed figure is the mean of ``--steps`` steps after one untimed step (which
makes the optimizer's state).

Run::

    .venv/bin/python bench/optimizer_step.py            # SmolLM2-135M, ~1 min on 2 cores
"""

from __future__ import annotations

import argparse
import statistics
import time

import cpu_kind  # bench/cpu_kind.py, beside this script
import torch
from transformers import AutoModelForCausalLM

from reinforge.models.catalog import resolve_model_path
from reinforge.trainer import optimizer as optimizer_module
from reinforge.trainer.trainer_config import TrainerConfig


def time_steps(model: torch.nn.Module, fused: bool, steps: int) -> float:
    real = optimizer_module.fused_adamw_applies
    optimizer_module.fused_adamw_applies = real if fused else (lambda params: False)
    try:
        optimizer, _ = optimizer_module.build_optimizer(model, TrainerConfig(lr=2e-5))
    finally:
        optimizer_module.fused_adamw_applies = real
    optimizer.step()
    start = time.perf_counter()
    for _ in range(steps):
        optimizer.step()
    return (time.perf_counter() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(cpu_kind.describe(cpu_kind.capability()))
    model = AutoModelForCausalLM.from_pretrained(
        resolve_model_path(args.model), dtype=torch.float32
    )
    for p in model.parameters():
        p.grad = torch.randn_like(p) * 1e-3
    count = sum(p.numel() for p in model.parameters())
    print(f"{args.model}: {count / 1e6:.1f} M parameters, torch threads {args.threads}")
    seconds: dict[str, list[float]] = {"fused": [], "loop": []}
    for _ in range(args.rounds):
        seconds["loop"].append(time_steps(model, False, args.steps))
        seconds["fused"].append(time_steps(model, True, args.steps))
    loop, fused = (statistics.median(seconds[k]) for k in ("loop", "fused"))
    for name, runs in seconds.items():
        print(
            f"{name:>5}: {statistics.median(runs):.3f} s a step (rounds: "
            + ", ".join(f"{s:.3f}" for s in runs)
            + ")"
        )
    print(f"fused is {loop / fused:.2f}x the loop's speed")


if __name__ == "__main__":
    main()
