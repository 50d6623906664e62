"""One GiGPO trainer step on step-wise FrozenLake runs, steps merged into one row per run
(``trainer.merge_step_prefixes``, the default) against one row per step, in one run.

A step-wise run's step k holds steps 0..k-1's tokens as its prompt, so one row per step
forwards the start of a run once per step. This plays ``--games`` step-wise FrozenLake
games on the shipped training maps (``--repeat`` games per map, show_surroundings on,
as bench/agent_learning.py's RL stages) with SmolLM2-135M-Instruct, or with the weights
of ``--init-from`` (a run directory or checkpoint, e.g. an SFT warm start, whose games
are shorter), then times ``Trainer.train_step`` on those experiences under both
settings, interleaved round by round (a fresh trainer each time, the examples' trainer
settings: gradient checkpointing, 1,024-token micro-batches).

Printed per setting: rows, tokens forwarded, median seconds per step over ``--rounds``,
the speed-up, and the largest difference of the two settings' gradients relative to
the largest gradient entry (they are the same gradient; float noise only).

Run::

    .venv/bin/python bench/step_wise_step.py
    .venv/bin/python bench/step_wise_step.py --init-from runs/frozen_lake/sft
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from reinforge.algorithms.step_prefixes import merge_step_prefixes
from reinforge.core import Experience, Task
from reinforge.core.eid import EID
from reinforge.models.catalog import resolve_model_path
from reinforge.models.engines.hf import HFEngine, load_causal_lm
from reinforge.models.model_wrapper import ModelWrapper
from reinforge.trainer.init_weights import apply_init_weights, init_weights, load_into
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

REPO = Path(__file__).resolve().parents[1]
MAPS = REPO / "examples" / "frozen_lake" / "data" / "train.jsonl"
TRAINER = {
    "algorithm": "gigpo",
    "algorithm_args": {"kl_loss": "none"},
    "lr": 5e-5,
    "micro_batch_size": 8,
    "micro_batch_tokens": 1024,
    "gradient_checkpointing": True,
}


def play(model_path: Path, weights: dict[str, torch.Tensor] | None, games: int, repeat: int):
    """``games`` step-wise games, ``repeat`` per map; their experiences and the pad id."""
    model, tokenizer = load_causal_lm(model_path, "cpu", torch.float32)
    if weights is not None:
        load_into(model, weights, "--init-from")
    rows = [json.loads(line) for line in MAPS.read_text().splitlines() if line.strip()]
    exps: list[Experience] = []
    with HFEngine(model=model, tokenizer=tokenizer, device="cpu", seed=1) as engine:
        wrapper = ModelWrapper(engine, enable_history=True)
        for index in range(games):
            task_index, run = divmod(index, repeat)
            task = Task(
                workflow="step_wise_frozen_lake_workflow",
                raw_task=rows[task_index % len(rows)],
                workflow_args={"max_steps": 6, "show_surroundings": True},
            )
            task.rollout_args.max_tokens = 16
            for exp in task.to_workflow(wrapper).run():
                exp.eid = EID(batch=1, task=task_index, run=run, step=exp.eid.step)
                exps.append(exp)
    return exps, tokenizer.pad_token_id


def time_step(
    model_path: Path, weights: Any, exps: list[Experience], pad: int, merge: bool
) -> tuple[float, dict[str, torch.Tensor]]:
    cfg = TrainerConfig.model_validate({**TRAINER, "merge_step_prefixes": merge})
    trainer = Trainer(model_path, cfg, pad_token_id=pad)
    if weights is not None:
        apply_init_weights(trainer, weights)
    grads: dict[str, torch.Tensor] = {}

    def record(*_: Any) -> None:
        for name, p in trainer.model.named_parameters():
            if p.grad is not None:
                grads[name] = p.grad.detach().clone()

    trainer.optimizer.register_step_pre_hook(record)
    start = time.perf_counter()
    trainer.train_step(copy.deepcopy(exps))
    seconds = time.perf_counter() - start
    return seconds, grads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=8, help="games per map")
    parser.add_argument("--init-from", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model_path = resolve_model_path("smollm2-135m-instruct")
    weights = init_weights(args.init_from, model_path) if args.init_from else None
    exps, pad = play(model_path, weights, args.games, args.repeat)
    wins = sum(1 for e in exps if (e.reward or 0) > 0)
    print(
        f"{args.games} games ({args.repeat} per map), {len(exps)} steps, {wins} won, "
        f"weights: {args.init_from or 'base model'}, torch threads {args.threads}"
    )
    settings = {"one row per step": False, "one row per run (merged)": True}
    times: dict[str, list[float]] = {name: [] for name in settings}
    grads: dict[str, dict[str, torch.Tensor]] = {}
    for _ in range(args.rounds):
        for name, merge in settings.items():
            seconds, grads[name] = time_step(model_path, weights, exps, pad, merge)
            times[name].append(seconds)
    apart, merged = grads["one row per step"], grads["one row per run (merged)"]
    scale = max(float(g.abs().max()) for g in apart.values())
    gap = max(float((merged[k] - g).abs().max()) for k, g in apart.items()) / max(scale, 1e-12)
    shapes = {"one row per step": exps, "one row per run (merged)": merge_step_prefixes(exps)}
    base = statistics.median(times["one row per step"])
    print(f"{'setting':<28} {'rows':>5} {'tokens':>7} {'s/step':>8} {'speed-up':>9}")
    for name, rows in shapes.items():
        median = statistics.median(times[name])
        tokens = sum(len(e.tokens) for e in rows)
        print(f"{name:<28} {len(rows):>5} {tokens:>7} {median:8.2f} {base / median:8.2f}x")
    print(f"gradients: largest difference {gap:.2e} of the largest entry")


if __name__ == "__main__":
    main()
