"""bench/grpo_vs_trl.py's settings: the flags, the frozen ``Settings`` both sides run
under, and the workers' offline environment (split out of the script: house rules)."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

GRPO_CONFIG = ROOT / "examples" / "arithmetic" / "grpo.yaml"
SIDES = ("reinforge", "trl")
SAMPLED_EVAL = "arithmetic-test"
GREEDY_EVAL = "arithmetic-test-greedy"


@dataclass(frozen=True)
class Settings:
    """What both sides share; one JSON spec per worker subprocess."""

    model: str = "smollm2-135m-instruct"
    steps: int = 8
    prompts: int = 8
    group: int = 8
    max_tokens: int = 32
    temperature: float = 1.0
    lr: float = 2e-5
    warmup_steps: int = 2
    micro_batch: int = 16
    #: the demo's (no KL term, no reference model), which is TRL's default beta too
    kl_coef: float = 0.0
    std_filter: bool = True
    threads: int = 2
    seed: int = 0
    eval_k: int = 4
    eval_limit: int | None = None
    #: held-out evaluation after every this many steps (and after the last), both sides
    eval_every: int = 2
    #: the accuracy level whose time-to-reach is reported (held-out mean@k)
    level: float = 0.5
    greedy: bool = False
    #: both sides alike: bf16 = bf16 autocast forward passes with fp32 master weights
    #: (and reinforge's bf16 sampling engine); fp32 = everything in float32; auto = bf16
    #: where the CPU has it natively, else fp32 (resolved before the sides run)
    precision: str = "auto"
    gradient_checkpointing: bool = True
    #: reinforge's trainer.old_logprobs (sampler: pi_old from the engine, as before session 7)
    old_logprobs: str = "trainer"

    @property
    def rollouts_per_step(self) -> int:
        return self.prompts * self.group

    @property
    def eval_steps(self) -> list[int]:
        """Steps after which both sides' models are evaluated (the last one included)."""
        return sorted({*range(self.eval_every, self.steps + 1, self.eval_every), self.steps})


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line flags; defaults follow examples/arithmetic/grpo.yaml except the step count.

    8 steps (the demo runs 16) keep one full run, TRL's side and the evaluation
    included, at about 15 minutes on 2 lightly loaded cores.
    """
    d = Settings()
    p = argparse.ArgumentParser(
        description="GRPO on CPU: reinforge vs TRL GRPOTrainer (same task, model, settings).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--model", default=d.model, help="catalog name or local HF model directory")
    p.add_argument("--steps", type=int, default=d.steps, help="optimiser steps per side")
    p.add_argument("--prompts", type=int, default=d.prompts, help="prompts per step")
    p.add_argument("--group", type=int, default=d.group, help="rollouts per prompt (group size)")
    p.add_argument("--max-tokens", type=int, default=d.max_tokens, help="max completion tokens")
    p.add_argument("--temperature", type=float, default=d.temperature)
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--warmup-steps", type=int, default=d.warmup_steps)
    p.add_argument(
        "--micro-batch", type=int, default=d.micro_batch, help="sequences per forward/backward"
    )
    p.add_argument(
        "--kl-coef",
        type=float,
        default=d.kl_coef,
        help="KL loss coefficient (reinforge kl_loss_coef, TRL beta); 0 = no reference model",
    )
    p.add_argument(
        "--no-std-filter",
        dest="std_filter",
        action="store_false",
        help="train reinforge on every group (no reward_std_filter), like TRL",
    )
    p.add_argument("--threads", type=int, default=d.threads, help="torch threads per side")
    p.add_argument("--seed", type=int, default=d.seed, help="first seed")
    p.add_argument(
        "--seeds",
        type=int,
        default=1,
        help="seeds per side (seed, seed+1, ...); each seed runs both sides on the same "
        "prompt order, and the report gives 95%% intervals over seeds",
    )
    p.add_argument(
        "--eval-every",
        type=int,
        default=d.eval_every,
        help="evaluate both sides' models after every N steps (and the last)",
    )
    p.add_argument(
        "--level",
        type=float,
        default=d.level,
        help="held-out mean@k whose wall time to reach is reported",
    )
    p.add_argument("--greedy", action="store_true", help="also evaluate greedy accuracy (1 sample)")
    p.add_argument(
        "--report",
        type=Path,
        nargs="+",
        help="print the report of earlier runs' results.json files, their seeds pooled "
        "(e.g. at another --level); the runs must share their settings and CPU kind; "
        "--only runs of the same seed (one per side) are joined side by side",
    )
    p.add_argument(
        "--eval-k", type=int, default=d.eval_k, help="samples per held-out question (mean@k)"
    )
    p.add_argument(
        "--eval-limit", type=int, default=d.eval_limit, help="held-out questions (default: all)"
    )
    p.add_argument(
        "--precision",
        choices=["auto", "bf16", "fp32"],
        default=d.precision,
        help="both sides alike; auto: bf16 where the CPU computes it natively (AVX-512 BF16, "
        "AMX), fp32 elsewhere, as the demo's auto settings",
    )
    p.add_argument(
        "--gradient-checkpointing",
        action=argparse.BooleanOptionalAction,
        default=d.gradient_checkpointing,
        help="both sides alike",
    )
    p.add_argument(
        "--old-logprobs",
        choices=["trainer", "sampler"],
        default=d.old_logprobs,
        help="reinforge's trainer.old_logprobs: pi_old from the trainer's own forward, or "
        "the sampling engine's log-probs (reinforge's behaviour before session 7)",
    )
    p.add_argument(
        "--only",
        choices=SIDES,
        help="run one side only (e.g. to compare reinforge settings against a TRL run "
        "of the same seeds, which is deterministic for a seed)",
    )
    p.add_argument(
        "--order",
        default="reinforge,trl",
        help="which side runs first for the first seed; later seeds alternate",
    )
    p.add_argument(
        "--out-dir",
        type=Path,
        default=ROOT / "runs" / "bench" / "grpo_vs_trl",
        help="work directory (replaced); results.json is written here",
    )
    p.add_argument("--skip-eval", action="store_true", help="timing only: no held-out evaluation")
    p.add_argument("--keep-models", action="store_true", help="keep the trained model folders")
    p.add_argument("--worker", choices=[*SIDES, "eval"], help=argparse.SUPPRESS)
    p.add_argument("--spec", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    order = [s.strip() for s in args.order.split(",")]
    if sorted(order) != sorted(SIDES):
        p.error(f"--order must name both sides once, e.g. 'trl,reinforge' (got {args.order!r})")
    args.order = order
    if args.worker is None:
        for name in (
            "steps",
            "prompts",
            "group",
            "max_tokens",
            "micro_batch",
            "threads",
            "eval_k",
            "seeds",
            "eval_every",
        ):
            if getattr(args, name) < 1:
                p.error(f"--{name.replace('_', '-')} must be >= 1")
        if args.group < 2:
            p.error("--group must be >= 2 (GRPO compares rollouts within a group)")
        if (args.prompts * args.group) % args.micro_batch:
            p.error(
                f"--prompts x --group ({args.prompts * args.group}) must be a multiple of "
                f"--micro-batch ({args.micro_batch}): TRL accumulates whole micro-batches"
            )
    return args


def resolve_precision(settings: Settings, cpu: dict[str, Any]) -> Settings:
    """``settings`` with ``precision: auto`` replaced by what it is on this CPU (``cpu``,
    a ``cpu_kind.capability()`` record), so both sides and results.json see one value."""
    if settings.precision != "auto":
        return settings
    return replace(settings, precision=cpu["auto_precision"])


def settings_from_args(args: argparse.Namespace) -> Settings:
    return Settings(
        **{
            name: getattr(args, name)
            for name in Settings.__dataclass_fields__
            if hasattr(args, name)
        }
    )


# ---- shared helpers (workers) ---------------------------------------------------------


def _offline_env(threads: int) -> dict[str, str]:
    """Environment of a worker: no hub access, the same thread count on both sides."""
    env = dict(os.environ)
    env.update(
        {
            "OMP_NUM_THREADS": str(threads),
            "MKL_NUM_THREADS": str(threads),
            "TOKENIZERS_PARALLELISM": "false",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env
