"""GRPO on CPU: reinforge against TRL's ``GRPOTrainer``, same task, model and settings.

Why: reinforge's claim is that RL fine-tuning of a small model is practical on a
laptop CPU. The obvious alternative is TRL's ``GRPOTrainer`` in its normal CPU
configuration, so this script runs both, one after the other in one invocation,
and reports throughput, memory and held-out accuracy side by side.

What runs (each in its own subprocess, so that peak memory is measured per side):

1. reinforge: ``reinforge.launcher.modes.run_both`` (what ``reinforge run`` does
   for ``mode: both``) with the settings of ``examples/arithmetic/grpo.yaml``:
   GRPO preset (PPO clip 0.2, token-mean, no KL term as in the demo), the
   ``reward_std_filter`` pipeline, HF engine, full fine-tuning, AdamW with linear
   warm-up. In-run evaluation is switched off; the flags (steps, prompts per
   step, group size, ...) override the config, and the default step count is 8
   where the demo runs 16.
2. TRL: ``GRPOTrainer`` with ``use_cpu=True``, its own ``model.generate``
   rollouts, and the matching settings: ``num_generations`` = rollouts per
   prompt, one optimiser step per generation batch of prompts x rollouts
   (``per_device_train_batch_size`` = reinforge's micro-batch,
   ``gradient_accumulation_steps`` = batch / micro-batch), same
   ``max_completion_length``, temperature (top-p 1, no top-k), learning rate,
   warm-up schedule (the same LambdaLR as reinforge's trainer, passed in via
   ``optimizers``), AdamW betas/eps, no weight decay, grad-norm clip 1.0,
   ``beta`` = reinforge's KL coefficient (TRL's KL is the same k3 /
   "low_var_kl" estimator, unclamped), ``epsilon`` 0.2, ``loss_type="dapo"``
   (token mean over the whole batch, like reinforge's ``token-mean``),
   ``scale_rewards="group"`` (GRPO's std-normalised advantages). Precision and
   gradient checkpointing are set alike on both sides (``--precision``,
   ``--gradient-checkpointing``): by default ``auto``, as the demo's
   ``mixed_precision: auto`` and ``dtype: auto``: bf16 where the CPU computes it
   natively (AVX-512 BF16 or AMX; TRL's ``bf16=True``, autocast with fp32 weights,
   like reinforge's ``mixed_precision: bf16``; reinforge also samples with a bf16
   engine, which TRL's ``model.generate`` on the training model cannot), fp32
   elsewhere (an AVX2-only CPU emulates bf16 many times slower), and checkpointing
   on, as the demo runs. The CPU's kind (AVX2, AVX-512 BF16, AMX; ``cpu_kind.py``)
   and what ``auto`` became are printed first and stored in results.json.
   The prompts are the same rows in the same
   order (reinforge's shuffled taskset order, TRL's ``shuffle_dataset=False``),
   rendered with the same chat template (checked: identical token ids), and
   scored by the same reward function (reinforge's ``accuracy_reward``,
   math-verify, called from a TRL reward function).
3. eval: each side saves its policy after every ``--eval-every`` steps and the
   last (the save time is not counted as training time); ONE subprocess then
   evaluates the untrained model (first seed) and every saved model of both sides
   with reinforge's own evaluator (HF engine, ModelWrapper, ``simple_workflow``,
   ``accuracy_reward``) on all 274 held-out questions of
   ``examples/arithmetic/data/test.jsonl``: mean@k (k samples per question at the
   training temperature), and with ``--greedy`` also greedy accuracy.

Seeds: ``--seeds N`` repeats all of that for seeds ``--seed`` .. ``--seed``+N-1.
A seed sets both sides' prompt order (paired), sampling and initialisation; which
side runs first alternates from seed to seed. After the last seed the script
prints each side's final mean@k with its 95% t-interval over seeds, the paired
difference's interval and the number of seeds its spread needs for an interval
narrower than 0.06, and the *time to accuracy*: training wall time until held-out
mean@k first reached ``--level`` (0.5), median over seeds, per side and as a ratio
(a seed that never reached it counts as slower than any that did).

Differences that remain (on purpose, each side's normal behaviour): reinforge's
``reward_std_filter`` drops groups whose rollouts all got the same reward before
the update (their GRPO advantage is 0, so in TRL they add no gradient, only KL
gradient when ``--kl-coef`` > 0, but count in the loss normaliser);
reinforge's PPO loss has dual clip c=3, TRL's default has none (no effect at
ratio 1). ``--no-std-filter`` removes the first difference; ``--old-logprobs
sampler`` makes reinforge divide by its engine's log-probs as it did before
session 7 (``bench/grpo_parity.py`` compares the pieces of one update).

How samples are counted: one *rollout* is one sampled completion. Both sides
sample prompts x rollouts completions per step and hand all of them to that
step's update, so ``rollouts/min`` = steps x prompts x rollouts / training wall
time is the headline number. The stricter ``backward/min`` counts only the
completions that went through the forward/backward pass: all of them for TRL,
those that survive ``reward_std_filter`` for reinforge.

Timing: *training wall* runs from just before the side builds its training
objects (after Python imports; it includes loading the policy, the reference
model and, for reinforge, the inference engine) to the end of the last optimiser
step, before the final model is saved. *s/step* is the mean time per step after
the first one, split into the rollout phase (reinforge: the explore step;
TRL: ``_generate_and_score_completions``, which also computes the reference
model's log-probs) and the rest (update, weight sync, bookkeeping). *process
wall* and *CPU time* cover the whole subprocess, imports and saving included;
rollouts per CPU-minute moves less with other load on the machine than the wall
figures. Peak RSS: of the training process itself (``RUSAGE_SELF``) and the
largest process of its tree (``os.wait4``; reward workers included, not summed).
The 1-minute load average is sampled every 5 s while each side runs.

Accuracy at equal wall time: both sides run the same number of steps; W = the
slower side's training wall time. The faster side's final model is its model as
of a wall time <= W (it stopped earlier and is not given the rest of W), so both
final models are compared at "wall time <= W", which, if anything, handicaps the
faster side.

Run::

    .venv/bin/python bench/grpo_vs_trl.py             # one seed, about 25 min on 2 cores
    .venv/bin/python bench/grpo_vs_trl.py --seeds 3 --eval-every 4   # about 50 min
    .venv/bin/python bench/grpo_vs_trl.py --steps 2   # smoke run
    .venv/bin/python bench/grpo_vs_trl.py --report runs/bench/grpo_vs_trl/results.json --level 0.45
    make bench-trl                                    # installs .[bench] (TRL) first

Numbers on a shared machine move with other load: both sides run one after the
other, so a busy neighbour during one side skews the ratio (``--order`` flips
which side goes first). Measured numbers: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import cpu_kind  # noqa: E402  (bench/cpu_kind.py, beside this script)
import seed_stats  # noqa: E402  (bench/seed_stats.py, beside this script)

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
        "(e.g. at another --level); the runs must share their settings",
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


def reinforge_config(settings: Settings, run_dir: Path, model_dir: str) -> Any:
    """examples/arithmetic/grpo.yaml with the bench's step/batch settings, no in-run eval."""
    from reinforge.config import config_from_dict, load_config

    data = load_config(GRPO_CONFIG).model_dump(mode="json", by_alias=False)
    data["run_dir"] = str(run_dir)
    data["model"]["model_path"] = model_dir
    data["model"]["max_response_tokens"] = settings.max_tokens
    data["model"]["hf"]["seed"] = settings.seed
    data["model"]["hf"]["num_threads"] = settings.threads
    buffer = data["buffer"]
    buffer["batch_size"] = settings.prompts
    buffer["total_steps"] = settings.steps
    taskset = buffer["explorer_input"]["taskset"]
    taskset["repeat_times"] = settings.group
    taskset["rollout_args"]["temperature"] = settings.temperature
    buffer["explorer_input"]["eval_tasksets"] = []
    if not settings.std_filter:
        ops = buffer["experience_pipeline"]["operators"]
        buffer["experience_pipeline"]["operators"] = [
            op for op in ops if op["name"] != "reward_std_filter"
        ]
    trainer = data["trainer"]
    trainer.update(
        old_logprobs=settings.old_logprobs,
        lr=settings.lr,
        warmup_steps=settings.warmup_steps,
        micro_batch_size=settings.micro_batch,
        seed=settings.seed,
        mixed_precision={"auto": "auto", "bf16": "bf16"}.get(settings.precision, "no"),
        gradient_checkpointing=settings.gradient_checkpointing,
    )
    data["model"]["hf"]["dtype"] = {"auto": "auto", "bf16": "bfloat16"}.get(
        settings.precision, "float32"
    )
    trainer["algorithm_args"] = {**trainer.get("algorithm_args", {}), "kl_loss_coef": 0.0}
    if settings.kl_coef > 0:  # the grpo preset's estimator, TRL's k3
        trainer["algorithm_args"].update(kl_loss="low_var_kl", kl_loss_coef=settings.kl_coef)
    data["explorer"].update(eval_on_start=False, eval_interval=None)
    data["checkpoint"].update(save_interval=None, max_checkpoints_to_keep=1)
    data["monitor"].update(progress=False, jsonl=True, tensorboard=False, plot=False)
    return config_from_dict(data, str(GRPO_CONFIG), config_dir=str(GRPO_CONFIG.parent))


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")


def _log(side: str, message: str) -> None:
    print(f"[{side}] {message}", file=sys.stderr, flush=True)


# ---- worker: reinforge ----------------------------------------------------------------


def worker_reinforge(spec: dict[str, Any]) -> dict[str, Any]:
    """Run reinforge's ``run_both`` loop; time it; save the policy at each eval step."""
    import asyncio
    import gc

    import torch

    torch.set_num_threads(spec["settings"]["threads"])
    from reinforge.launcher import modes
    from reinforge.launcher.session import RunSession
    from reinforge.launcher.training_loop import TrainingLoop

    settings = Settings(**spec["settings"])
    work = Path(spec["work_dir"])
    cfg = reinforge_config(settings, work / "run", spec["model_dir"])
    modes.check_mode(cfg)
    marks: dict[str, float] = {"saving": 0.0}
    step_ends: list[float] = []
    trained: list[float] = []
    lrs: list[float] = []
    models: dict[int, str] = {}
    original_train = TrainingLoop.train

    # Instrumentation only: when each step's update finished (the time spent saving
    # the eval models excluded), and the policy after each eval step.
    def timed_train(loop: TrainingLoop, step: int, exps: Any, **kwargs: Any) -> Any:
        trainer = loop.trainer
        applied = float(trainer.optimizer.param_groups[0]["lr"])  # this step's learning rate
        result = original_train(loop, step, exps, **kwargs)
        metrics = result.metrics
        step_ends.append(time.monotonic() - marks["start"] - marks["saving"])
        trained.append(float(metrics.get("train/experiences", 0.0)))
        lrs.append(applied)
        if step in settings.eval_steps:
            saving = time.monotonic()
            models[step] = _save_policy(trainer.model, work / f"model-step{step}")
            marks["saving"] += time.monotonic() - saving
        _log(
            "reinforge",
            f"step {step}/{settings.steps} done at {step_ends[-1]:.1f} s, "
            f"{int(trained[-1])} completions through backward, "
            f"loss {metrics.get('train/loss', float('nan')):.4f}",
        )
        return result

    TrainingLoop.train = timed_train  # type: ignore[method-assign]
    gc.freeze()  # as the CLI does: import-time objects out of the GC's way
    marks["start"] = time.monotonic()
    session = RunSession.open(cfg)
    try:
        asyncio.run(modes.run_both(session))
    finally:
        session.close()
    rewards, lengths, rollout_s, sampled = [], [], [], []
    for line in (cfg.resolved_run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        if "explore/reward_mean" in row:
            rewards.append(row["explore/reward_mean"])
            lengths.append(row.get("explore/response_length", float("nan")))
            rollout_s.append(row.get("explore/step_time", float("nan")))
            sampled.append(row.get("explore/experiences", float(settings.rollouts_per_step)))
    shutil.rmtree(cfg.checkpoint_dir, ignore_errors=True)  # the run's own final checkpoint
    return {
        "train_wall_s": step_ends[-1],
        "step_ends_s": step_ends,
        "rollouts": int(sum(sampled)),  # steps x prompts x group unless a task failed
        "backward_samples": sum(trained),
        "rollout_s_per_step": rollout_s,
        "train_reward_per_step": rewards,
        "response_length_per_step": lengths,
        "lr_per_step": lrs,
        "models": {str(k): v for k, v in models.items()},
        "threads": torch.get_num_threads(),
    }


def _save_policy(model: Any, folder: Path) -> str:
    """The policy's weights as a HF model folder (what the shared evaluator loads)."""
    model.save_pretrained(folder, safe_serialization=True)
    return str(folder)


# ---- worker: TRL ----------------------------------------------------------------------


def trl_rows(settings: Settings, model_dir: str, work: Path) -> list[dict[str, Any]]:
    """reinforge's training tasks, in reinforge's (shuffled) order, as TRL prompt rows.

    The user message comes from reinforge's own ``simple_workflow`` (prompt template
    applied), so both sides chat-template exactly the same conversation.
    """
    from reinforge.buffer import load_taskset
    from reinforge.workflows import WORKFLOWS

    cfg = reinforge_config(settings, work / "unused", model_dir)
    taskset = cfg.buffer.explorer_input.taskset
    loaded = load_taskset(taskset, base_dir=Path(cfg.config_dir))
    workflow_cls = WORKFLOWS.get(taskset.default_workflow_type)
    rows = []
    for task in loaded.tasks:
        messages = workflow_cls(task=task, model=None).format_messages()
        rows.append({"prompt": messages, "answer": str(task.truth)})
    return rows


def worker_trl(spec: dict[str, Any]) -> dict[str, Any]:
    """Run TRL's GRPOTrainer with the matching settings; time it; save the final model."""
    import torch

    torch.set_num_threads(spec["settings"]["threads"])
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from reinforge.rewards.accuracy_reward import AccuracyReward

    settings = Settings(**spec["settings"])
    if settings.precision == "auto":  # the parent resolves it; a hand-made spec may not
        settings = resolve_precision(settings, cpu_kind.capability())
    work = Path(spec["work_dir"])
    dataset = Dataset.from_list(trl_rows(settings, spec["model_dir"], work))
    reward_fn = AccuracyReward()  # what the taskset's accuracy_reward builds (5 s timeout)

    def accuracy(completions: list[Any], answer: list[str], **_: Any) -> list[float]:
        return [
            reward_fn(response=c[0]["content"] if isinstance(c, list) else c, truth=a)["accuracy"]
            for c, a in zip(completions, answer, strict=True)
        ]

    step_ends: list[float] = []
    rewards: list[float] = []
    lengths: list[float] = []
    lrs: list[float] = []
    models: dict[str, str] = {}
    marks: dict[str, float] = {"saving": 0.0}

    class Progress(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            lrs.append(float(kwargs["optimizer"].param_groups[0]["lr"]))

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            step_ends.append(time.monotonic() - marks["start"] - marks["saving"])
            step = state.global_step
            if step in settings.eval_steps:
                saving = time.monotonic()
                models[str(step)] = _save_policy(kwargs["model"], work / f"model-step{step}")
                marks["saving"] += time.monotonic() - saving
            _log("trl", f"step {step}/{settings.steps} done at {step_ends[-1]:.1f} s")

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            if logs and "reward" in logs:
                rewards.append(float(logs["reward"]))
                lengths.append(float(logs.get("completions/mean_length", float("nan"))))

    batch = settings.rollouts_per_step
    config = GRPOConfig(
        output_dir=str(work / "trainer"),
        use_cpu=True,
        bf16=settings.precision == "bf16",
        fp16=False,
        gradient_checkpointing=settings.gradient_checkpointing,
        per_device_train_batch_size=settings.micro_batch,
        gradient_accumulation_steps=batch // settings.micro_batch,
        num_generations=settings.group,
        max_completion_length=settings.max_tokens,
        temperature=settings.temperature,
        top_p=1.0,
        top_k=0,
        learning_rate=settings.lr,
        weight_decay=0.0,
        adam_beta1=0.9,
        adam_beta2=0.999,
        adam_epsilon=1e-8,
        max_grad_norm=1.0,
        beta=settings.kl_coef,
        epsilon=0.2,
        loss_type="dapo",
        scale_rewards="group",
        num_iterations=1,
        max_steps=settings.steps,
        shuffle_dataset=False,
        seed=settings.seed,
        save_strategy="no",
        logging_steps=1,
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
        log_completions=False,
    )
    marks["start"] = time.monotonic()
    model = AutoModelForCausalLM.from_pretrained(
        spec["model_dir"], dtype=torch.float32, local_files_only=True
    )
    # reinforge's optimiser and warm-up: AdamW, lr * min(1, (step + 1) / warmup)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=settings.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0
    )
    warmup = settings.warmup_steps
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup) if warmup else 1.0
    )
    rollout_s: list[float] = []

    class TimedGRPOTrainer(GRPOTrainer):
        """Times the rollout phase: generate, score, reference log-probs (once per step)."""

        def _generate_and_score_completions(self, inputs: Any) -> Any:
            start = time.monotonic()
            out = super()._generate_and_score_completions(inputs)
            rollout_s.append(time.monotonic() - start)
            return out

    trainer = TimedGRPOTrainer(
        model=model,
        reward_funcs=accuracy,
        args=config,
        train_dataset=dataset,
        callbacks=[Progress()],
        optimizers=(optimizer, scheduler),
    )
    trainer.train()
    return {
        "train_wall_s": step_ends[-1],
        "step_ends_s": step_ends,
        "rollouts": settings.steps * batch,
        "backward_samples": float(settings.steps * batch),
        "rollout_s_per_step": rollout_s,
        "train_reward_per_step": rewards,
        "response_length_per_step": lengths,
        "lr_per_step": lrs,
        "models": models,
        "threads": torch.get_num_threads(),
        "trl_version": __import__("trl").__version__,
    }


# ---- worker: shared evaluator ---------------------------------------------------------


def _load_weights(model_dir: Path) -> dict[str, Any]:
    """The tensors of a HF model directory saved with safetensors (one file or shards)."""
    from safetensors.torch import load_file

    weights: dict[str, Any] = {}
    for file in sorted(model_dir.glob("*.safetensors")):
        weights.update(load_file(file))
    if not weights:
        raise FileNotFoundError(f"no *.safetensors in {model_dir}")
    return weights


def worker_eval(spec: dict[str, Any]) -> dict[str, Any]:
    """One engine, one evaluator: held-out mean@k (and greedy accuracy with ``--greedy``)
    of each model in turn."""
    import asyncio

    import torch

    torch.set_num_threads(spec["settings"]["threads"])
    from reinforge.config import config_from_dict
    from reinforge.launcher.session import RunSession

    settings = Settings(**spec["settings"])
    work = Path(spec["work_dir"])
    cfg = reinforge_config(settings, work / "run", spec["model_dir"])
    data = cfg.model_dump(mode="json", by_alias=False)
    from reinforge.config import load_config

    test = (
        load_config(GRPO_CONFIG)
        .buffer.explorer_input.eval_tasksets[0]
        .model_dump(mode="json", by_alias=False)
    )
    test.update(limit=settings.eval_limit, repeat_times=settings.eval_k, name=SAMPLED_EVAL)
    test["rollout_args"]["temperature"] = settings.temperature
    greedy = json.loads(json.dumps(test))
    greedy.update(name=GREEDY_EVAL, repeat_times=1)
    greedy["rollout_args"]["temperature"] = 0.0
    data["buffer"]["explorer_input"]["eval_tasksets"] = (
        [test, greedy] if settings.greedy else [test]
    )
    data["mode"] = "eval"
    cfg = config_from_dict(data, "<bench eval>", config_dir=str(GRPO_CONFIG.parent))
    session = RunSession.open(cfg, with_pipeline=False)
    results: dict[str, Any] = {}

    async def run_all() -> None:
        for step, (name, folder) in enumerate(spec["models"].items()):
            if folder is not None:
                session.explorer.engine.update_weights(_load_weights(Path(folder)), version=step)
            start = time.monotonic()
            metrics = await session.explorer.evaluate(step)
            results[name] = {
                "sampled": metrics[f"eval/{SAMPLED_EVAL}/mean@{settings.eval_k}"],
                "greedy": metrics.get(f"eval/{GREEDY_EVAL}/mean@1"),
                "questions": int(metrics[f"eval/{SAMPLED_EVAL}/tasks"]),
                "seconds": time.monotonic() - start,
            }
            _log("eval", f"{name}: {results[name]}")

    try:
        asyncio.run(run_all())
    finally:
        session.close()
    return {"models": results}


WORKERS = {"reinforge": worker_reinforge, "trl": worker_trl, "eval": worker_eval}


# ---- parent: orchestration and report -------------------------------------------------


@dataclass
class WorkerRun:
    """One worker subprocess: its result JSON plus what the parent measured."""

    result: dict[str, Any]
    process_wall_s: float
    peak_rss_mib: float
    cpu_s: float
    load: list[float]  # 1-minute load average, sampled every few seconds while it ran


def run_worker(name: str, spec: dict[str, Any], work: Path, threads: int) -> WorkerRun:
    """Start ``--worker name`` in a fresh interpreter; wait with ``os.wait4`` for its peak RSS."""
    work.mkdir(parents=True, exist_ok=True)
    spec_path, result_path = work / "spec.json", work / "result.json"
    _write_json(spec_path, {**spec, "work_dir": str(work), "result_path": str(result_path)})
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        name,
        "--spec",
        str(spec_path),
    ]
    load: list[float] = []
    done = threading.Event()

    def sample_load() -> None:
        while not done.wait(5.0):
            load.append(os.getloadavg()[0])

    sampler = threading.Thread(target=sample_load, daemon=True)
    start = time.monotonic()
    proc = subprocess.Popen(cmd, env=_offline_env(threads), cwd=ROOT)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - start
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise RuntimeError(f"worker '{name}' failed with exit code {proc.returncode}")
    result = json.loads(result_path.read_text(encoding="utf-8"))
    # ru_maxrss is in KiB on Linux: the largest RSS of the child or any descendant it reaped
    cpu = usage.ru_utime + usage.ru_stime
    return WorkerRun(result, wall, usage.ru_maxrss / 1024.0, cpu, load or [os.getloadavg()[0]])


def per_step_s(step_ends: list[float]) -> float:
    """Mean seconds per step after the first (the first one carries warm-up costs)."""
    if len(step_ends) < 2:
        return float("nan")
    return (step_ends[-1] - step_ends[0]) / (len(step_ends) - 1)


def _mean(values: list[float]) -> float:
    finite = [v for v in values if isinstance(v, int | float) and math.isfinite(v)]
    return sum(finite) / len(finite) if finite else float("nan")


def build_report(
    settings: Settings, sides: dict[str, WorkerRun], evaluation: dict[str, Any] | None
) -> dict[str, Any]:
    """Numbers for the table and results.json (one dict per side, ratios, eval)."""
    report: dict[str, Any] = {"settings": asdict(settings), "sides": {}}
    for name, run in sides.items():
        r = run.result
        wall = r["train_wall_s"]
        report["sides"][name] = {
            "train_wall_s": wall,
            "process_wall_s": run.process_wall_s,
            "peak_rss_mib": run.peak_rss_mib,
            "main_peak_rss_mib": r.get("main_peak_rss_mib"),
            "cpu_s": run.cpu_s,
            "load_mean": _mean(run.load),
            "load_max": max(run.load),
            "rollouts": r["rollouts"],
            "rollouts_per_min": 60.0 * r["rollouts"] / wall,
            "backward_samples": r["backward_samples"],
            "backward_per_min": 60.0 * r["backward_samples"] / wall,
            "s_per_step": per_step_s(r["step_ends_s"]),
            "rollout_s_per_step": _mean(r.get("rollout_s_per_step", [])[1:]),
            "steady_rollouts_per_min": 60.0
            * settings.rollouts_per_step
            / per_step_s(r["step_ends_s"]),
            "rollouts_per_cpu_min": 60.0 * r["rollouts"] / run.cpu_s,
            "train_reward_mean": _mean(r["train_reward_per_step"]),
            "response_length_mean": _mean(r["response_length_per_step"]),
            "threads": r.get("threads"),
        }
        report["sides"][name]["update_s_per_step"] = (
            report["sides"][name]["s_per_step"] - report["sides"][name]["rollout_s_per_step"]
        )
        if "trl_version" in r:
            report["trl_version"] = r["trl_version"]
    a, b = report["sides"].get("reinforge"), report["sides"].get("trl")
    if a and b:
        report["ratio"] = {
            k: a[k] / b[k]
            for k in (
                "rollouts_per_min",
                "backward_per_min",
                "steady_rollouts_per_min",
                "rollouts_per_cpu_min",
            )
            if b[k] > 0
        }
        report["equal_wall_s"] = max(a["train_wall_s"], b["train_wall_s"])
    if evaluation is not None:
        report["eval"] = evaluation["models"]
    return report


def format_report(report: dict[str, Any]) -> str:
    """The printed table (plain text, one row per measure)."""
    s = report["settings"]
    sides = report["sides"]
    names = [n for n in SIDES if n in sides]
    trl = f"TRL {report.get('trl_version', '?')}"
    header = {"reinforge": "reinforge", "trl": trl}
    lines = [
        "",
        "GRPO on CPU: reinforge vs TRL GRPOTrainer",
        f"  task: examples/arithmetic (train.jsonl, held-out test.jsonl), model {s['model']}",
        f"  {s['steps']} steps x {s['prompts']} prompts x {s['group']} rollouts, max "
        f"{s['max_tokens']} new tokens, temperature {s['temperature']}, lr {s['lr']} "
        f"(warm-up {s['warmup_steps']}), micro-batch {s['micro_batch']}, KL coef {s['kl_coef']}, "
        f"reward_std_filter {'on' if s['std_filter'] else 'off'} (reinforge), "
        f"{s['threads']} torch threads per side, precision {s['precision']}",
    ]
    if "cpu" in report:
        lines.append("  " + cpu_kind.describe(report["cpu"]))
    lines.append("")

    def row(label: str, key: str, fmt: str, ratio: str | None = None) -> None:
        cells = [
            format(sides[n][key], fmt) if sides[n].get(key) is not None else "-" for n in names
        ]
        extra = ""
        value = report.get("ratio", {}).get(ratio) if ratio is not None else None
        if value is not None and math.isfinite(value):
            extra = f"{value:.2f}x"
        lines.append(f"  {label:<44}" + "".join(f"{c:>16}" for c in cells) + f"{extra:>16}")

    lines.append(
        f"  {'':<44}" + "".join(f"{header[n]:>16}" for n in names) + f"{'reinforge/TRL':>16}"
    )
    row("rollouts (steps x prompts x group)", "rollouts", "d")
    row("training wall (s)", "train_wall_s", ".1f")
    row("rollouts / min  [headline]", "rollouts_per_min", ".1f", "rollouts_per_min")
    row("completions through backward", "backward_samples", ".0f")
    row("completions through backward / min", "backward_per_min", ".1f", "backward_per_min")
    row("s / step (after step 1)", "s_per_step", ".1f")
    row("  of which rollout phase (sample, score) *", "rollout_s_per_step", ".1f")
    row("  of which update phase (rest of the step)", "update_s_per_step", ".1f")
    row("rollouts / min after step 1", "steady_rollouts_per_min", ".1f", "steady_rollouts_per_min")
    row("rollouts / CPU-min (whole process)", "rollouts_per_cpu_min", ".1f", "rollouts_per_cpu_min")
    row("process wall incl. imports, save (s)", "process_wall_s", ".1f")
    row("peak RSS, training process (MiB)", "main_peak_rss_mib", ".0f")
    row("peak RSS, largest process of the tree (MiB)", "peak_rss_mib", ".0f")
    row("process CPU time, user+sys (s)", "cpu_s", ".0f")
    row("1-min load average while running: mean", "load_mean", ".1f")
    row("1-min load average while running: max", "load_max", ".1f")
    row("train reward, mean over steps", "train_reward_mean", ".3f")
    row("mean completion length (tokens)", "response_length_mean", ".1f")
    ev = report.get("eval")
    if ev:
        base = ev.get("untrained", {})
        k = s["eval_k"]
        n_q = next(iter(ev.values()))["questions"]
        lines.append("")
        lines.append(
            f"  held-out accuracy, one shared evaluator (reinforge HF engine + simple_workflow + "
            f"accuracy_reward, {n_q} test questions)"
        )
        if "equal_wall_s" in report:
            lines.append(
                f"  models as of wall time <= W = {report['equal_wall_s']:.1f} s (the slower "
                "side's training wall): each side's final model after the same steps"
            )
        cols = ["untrained", *names]
        lines.append(
            f"  {'':<44}" + "".join(f"{header.get(c, c):>16}" for c in cols) + f"{'Δ r-TRL':>16}"
        )
        for key, label in (
            ("sampled", f"mean@{k}, temperature {s['temperature']}"),
            ("greedy", "greedy (temperature 0)"),
        ):
            cells = [ev[c][key] if c in ev else None for c in cols]
            if all(v is None for v in cells):
                continue  # greedy accuracy was not evaluated (--greedy)
            text = "".join(f"{'-' if v is None else format(v, '.3f'):>16}" for v in cells)
            delta = ""
            if "reinforge" in ev and "trl" in ev and ev["trl"][key] is not None:
                delta = f"{ev['reinforge'][key] - ev['trl'][key]:+.3f}"
            lines.append(f"  {label:<44}{text}{delta:>16}")
        if base:
            times = ", ".join(f"{c} {ev[c]['seconds']:.0f} s" for c in cols if c in ev)
            lines.append(f"  eval time per model: {times}")
    lines.append("")
    lines.append(
        "  rollouts: every sampled completion handed to a step's update (same count both sides);"
    )
    lines.append(
        "  through backward: after reinforge's reward_std_filter (all-equal-reward groups dropped);"
    )
    lines.append(
        "  TRL back-propagates every completion. Training wall: from before loading the models to"
    )
    lines.append("  the end of the last optimiser step (imports and the final save excluded).")
    lines.append(
        "  * TRL's rollout phase (_generate_and_score_completions) also computes the reference"
    )
    lines.append("  model's log-probs; reinforge computes them in its update phase.")
    return "\n".join(lines)


def run_seed(
    settings: Settings,
    model_dir: str,
    order: list[str],
    out: Path,
    *,
    evaluate: bool = True,
    with_untrained: bool = False,
    keep_models: bool = False,
) -> dict[str, Any]:
    """Both sides on one seed, then one shared evaluation of every saved model."""
    spec = {"settings": asdict(settings), "model_dir": model_dir}
    sides: dict[str, WorkerRun] = {}
    for side in order:
        print(f"--- seed {settings.seed}: {side} ---", flush=True)
        sides[side] = run_worker(side, spec, out / side, settings.threads)
        print(
            f"{side}: training wall {sides[side].result['train_wall_s']:.1f} s, "
            f"peak RSS {sides[side].peak_rss_mib:.0f} MiB, load {os.getloadavg()}",
            flush=True,
        )
    evaluation = None
    if evaluate:
        print(f"--- seed {settings.seed}: eval (shared evaluator) ---", flush=True)
        models: dict[str, str | None] = {"untrained": None} if with_untrained else {}
        for side in sides:
            for step, folder in sides[side].result["models"].items():
                models[f"{side}@{step}"] = folder
        evaluation = run_worker("eval", {**spec, "models": models}, out / "eval", settings.threads)
    for side in sides:
        for folder in sides[side].result["models"].values():
            if not keep_models:
                shutil.rmtree(folder, ignore_errors=True)
    return build_seed_report(settings, sides, evaluation.result if evaluation else None)


def build_seed_report(
    settings: Settings, sides: dict[str, WorkerRun], evaluation: dict[str, Any] | None
) -> dict[str, Any]:
    """``build_report`` of one seed plus each side's accuracy curve: (step, wall s, mean@k)."""
    models = evaluation["models"] if evaluation else {}
    final = {
        name: models[f"{name}@{settings.steps}"]
        for name in SIDES
        if f"{name}@{settings.steps}" in models
    }
    if "untrained" in models:
        final["untrained"] = models["untrained"]
    report = build_report(settings, sides, {"models": final} if final else None)
    report["cpu"] = cpu_kind.capability()
    report["seed"] = settings.seed
    report["curve"] = {
        name: [
            [
                int(step),
                run.result["step_ends_s"][int(step) - 1],
                models[f"{name}@{step}"]["sampled"],
            ]
            for step in run.result["models"]
            if f"{name}@{step}" in models
        ]
        for name, run in sides.items()
    }
    report["lr_per_step"] = {name: run.result.get("lr_per_step") for name, run in sides.items()}
    return report


def summarize(settings: Settings, seeds: list[dict[str, Any]], untrained: float | None) -> dict:
    """Over seeds: each side's final mean@k and the paired difference with 95% intervals,
    time to ``settings.level`` per side, and the rollouts/min ratio."""
    evaluated = [r for r in seeds if "eval" in r and all(n in r["eval"] for n in SIDES)]
    finals = {n: [r["eval"][n]["sampled"] for r in evaluated] for n in SIDES}
    diffs = [a - b for a, b in zip(finals["reinforge"], finals["trl"], strict=True)]
    if not evaluated:  # one side only (--only): its final accuracy over seeds
        finals = {
            n: [r["eval"][n]["sampled"] for r in seeds if n in r.get("eval", {})] for n in SIDES
        }
    start = [] if untrained is None else [(0.0, untrained)]
    times = {
        n: [
            seed_stats.time_to_level(
                start + [(w, acc) for _, w, acc in r["curve"][n]], settings.level
            )
            for r in evaluated
        ]
        for n in SIDES
    }
    medians = {n: seed_stats.median(t) for n, t in times.items()}
    speed = [r["ratio"]["rollouts_per_min"] for r in seeds if "ratio" in r]
    return {
        "seeds": [r["seed"] for r in evaluated],
        "final": {n: asdict(seed_stats.interval(v)) for n, v in finals.items()},
        "difference": asdict(seed_stats.interval(diffs)),
        "differences": diffs,
        "seeds_for_width_0.06": seed_stats.seeds_for_width(diffs, 0.06),
        "level": settings.level,
        "time_to_level_s": times,
        "time_to_level_median_s": medians,
        "time_to_level_ratio": medians["trl"] / medians["reinforge"]
        if math.isfinite(medians["reinforge"]) and medians["reinforge"] > 0
        else math.nan,
        "rollouts_per_min_ratio": asdict(seed_stats.interval(speed)),
        "rollouts_per_min_ratios": speed,
    }


def _minutes(seconds: float) -> str:
    return "not reached" if not math.isfinite(seconds) else f"{seconds / 60:.2f}"


def format_summary(settings: Settings, seeds: list[dict[str, Any]], summary: dict) -> str:
    """The headline table: per seed, then means with intervals over seeds."""
    k, level = settings.eval_k, summary["level"]
    lines = [
        "",
        f"Over {len(summary['seeds'])} seed(s), paired (same prompt order per seed); held-out "
        f"mean@{k} after {settings.steps} steps; minutes = training wall (eval and model saves "
        f"excluded) until held-out mean@{k} first reached {level} (evaluated after steps "
        f"{', '.join(map(str, settings.eval_steps))})",
        f"  {'seed':>5}{'reinforge':>11}{'TRL':>8}{'Δ':>8}{'min r':>13}{'min TRL':>13}"
        f"{'rollouts/min r/TRL':>20}",
    ]
    for r in seeds:
        if "eval" not in r or not all(n in r["eval"] for n in SIDES):
            continue
        acc = {n: r["eval"][n]["sampled"] for n in SIDES}
        ttl = {
            n: seed_stats.time_to_level([(w, a) for _, w, a in r["curve"][n]], level) for n in SIDES
        }
        lines.append(
            f"  {r['seed']:>5}{acc['reinforge']:>11.3f}{acc['trl']:>8.3f}"
            f"{acc['reinforge'] - acc['trl']:>+8.3f}{_minutes(ttl['reinforge']):>13}"
            f"{_minutes(ttl['trl']):>13}{r['ratio']['rollouts_per_min']:>19.2f}x"
        )
    final, diff = summary["final"], summary["difference"]
    lines.append("")
    for n in SIDES:
        lines.append(f"  {n:<10} mean@{k}: {seed_stats.Interval(**final[n]).format()}")
    width = diff["high"] - diff["low"]
    need = summary["seeds_for_width_0.06"]
    lines.append(
        f"  difference reinforge - TRL: {seed_stats.Interval(**diff).format(signed=True)}"
        + (f", interval width {width:.3f}" if math.isfinite(width) else "")
        + (f"; at this spread a width < 0.06 takes {need} seeds" if need else "")
    )
    med = summary["time_to_level_median_s"]
    reached = {n: sum(math.isfinite(t) for t in summary["time_to_level_s"][n]) for n in SIDES}
    n_seeds = len(summary["seeds"])
    lines.append(
        f"  minutes to mean@{k} >= {level} (median): reinforge {_minutes(med['reinforge'])} "
        f"({reached['reinforge']}/{n_seeds} seeds reached it), TRL {_minutes(med['trl'])} "
        f"({reached['trl']}/{n_seeds}); TRL/reinforge {summary['time_to_level_ratio']:.2f}x"
    )
    speed = summary["rollouts_per_min_ratio"]
    lines.append(
        f"  rollouts per wall minute, reinforge/TRL: {speed['mean']:.2f}x mean over seeds "
        f"({', '.join(f'{x:.2f}' for x in summary['rollouts_per_min_ratios'])})"
    )
    return "\n".join(lines)


def _untrained_accuracy(seeds: list[dict[str, Any]]) -> float | None:
    for r in seeds:
        if "untrained" in r.get("eval", {}):
            return r["eval"]["untrained"]["sampled"]
    return None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker is not None:
        spec = json.loads(args.spec.read_text(encoding="utf-8"))
        result = WORKERS[args.worker](spec)
        # this process alone (the parent's os.wait4 figure also covers reward workers)
        result["main_peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        _write_json(Path(spec["result_path"]), result)
        return 0
    settings = settings_from_args(args)
    cpu = cpu_kind.capability()
    if args.report is not None:
        runs = [json.loads(path.read_text(encoding="utf-8")) for path in args.report]
        kept = {k: v for k, v in runs[0]["settings"].items() if k not in ("seed", "level")}
        for path, run in zip(args.report, runs, strict=True):
            other = {k: v for k, v in run["settings"].items() if k not in ("seed", "level")}
            if other != kept:
                print(f"error: {path} was run with other settings than {args.report[0]}")
                return 2
        settings = replace(Settings(**runs[0]["settings"]), level=args.level)
        seeds = [seed for run in runs for seed in run["seeds"]]
        print(
            format_summary(settings, seeds, summarize(settings, seeds, _untrained_accuracy(seeds)))
        )
        return 0
    from reinforge.models.catalog import resolve_model_path

    print(cpu_kind.describe(cpu), flush=True)
    settings = resolve_precision(settings, cpu)
    model_dir = str(resolve_model_path(settings.model))
    out: Path = args.out_dir
    marker = out / ".grpo_vs_trl"
    if out.exists() and any(out.iterdir()) and not marker.exists():
        print(f"error: {out} is not empty and not a grpo_vs_trl work dir; pick another --out-dir")
        return 2
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    marker.touch()
    print(
        f"GRPO bench: {args.seeds} seed(s) from {settings.seed}, {settings.steps} steps x "
        f"{settings.prompts} prompts x {settings.group} rollouts per side, eval after steps "
        f"{settings.eval_steps}, precision {settings.precision} (both sides), work dir {out}",
        flush=True,
    )
    print(f"load average before: {os.getloadavg()}", flush=True)
    seeds: list[dict[str, Any]] = []
    for i in range(args.seeds):
        seed_settings = replace(settings, seed=settings.seed + i)
        order = args.order if i % 2 == 0 else list(reversed(args.order))
        if args.only:
            order = [args.only]
        report = run_seed(
            seed_settings,
            model_dir,
            order,
            out / f"seed{seed_settings.seed}",
            evaluate=not args.skip_eval,
            with_untrained=i == 0,
            keep_models=args.keep_models,
        )
        report["load_average_after"] = os.getloadavg()
        print(format_report(report), flush=True)
        seeds.append(report)
        summary = summarize(settings, seeds, _untrained_accuracy(seeds))
        # after every seed, so an interrupted run keeps what it measured
        _write_json(
            out / "results.json",
            {"settings": asdict(settings), "cpu": cpu, "seeds": seeds, "summary": summary},
        )
        shutil.rmtree(
            out / f"seed{seed_settings.seed}" / "reinforge" / "run" / "checkpoints",
            ignore_errors=True,
        )
    if not args.skip_eval and not args.only:
        print(format_summary(settings, seeds, summary))
    print(f"\n  {cpu_kind.describe(cpu)}")
    print(f"  load average (1/5/15 min) at the end: {os.getloadavg()}")
    print(f"  results: {out / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
