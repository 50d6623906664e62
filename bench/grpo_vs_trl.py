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

One seed in two shorter invocations (one per side, e.g. to fit a shared machine's
slot for heavy jobs), joined afterwards into the side-by-side table::

    .venv/bin/python bench/grpo_vs_trl.py --only reinforge --out-dir runs/bench/r
    .venv/bin/python bench/grpo_vs_trl.py --only trl --out-dir runs/bench/t
    .venv/bin/python bench/grpo_vs_trl.py --report runs/bench/r/results.json runs/bench/t/results.json

TRL without installing it into the venv (its dependencies are the venv's already)::

    .venv/bin/pip install --no-deps --target runs/trl_pkgs "trl>=1.16,<2"
    PYTHONPATH=runs/trl_pkgs .venv/bin/python bench/grpo_vs_trl.py

Numbers on a shared machine move with other load: both sides run one after the
other, so a busy neighbour during one side skews the ratio (``--order`` flips
which side goes first). Measured numbers: docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import cpu_kind  # noqa: E402  (bench/cpu_kind.py, beside this script)
from grpo_vs_trl_eval import worker_eval  # noqa: E402
from grpo_vs_trl_reinforge import _write_json, worker_reinforge  # noqa: E402
from grpo_vs_trl_reinforge import reinforge_config as reinforge_config  # noqa: E402
from grpo_vs_trl_report import (  # noqa: E402
    WorkerRun,
    _untrained_accuracy,
    build_seed_report,
    format_report,
    format_summary,
    join_sides,
    summarize,
)
from grpo_vs_trl_report import build_report as build_report  # noqa: E402
from grpo_vs_trl_settings import GREEDY_EVAL as GREEDY_EVAL  # noqa: E402
from grpo_vs_trl_settings import GRPO_CONFIG as GRPO_CONFIG  # noqa: E402
from grpo_vs_trl_settings import SAMPLED_EVAL as SAMPLED_EVAL  # noqa: E402
from grpo_vs_trl_settings import SIDES as SIDES  # noqa: E402
from grpo_vs_trl_settings import (  # noqa: E402
    Settings,
    _offline_env,
    parse_args,
    resolve_precision,
    settings_from_args,
)
from grpo_vs_trl_trl import worker_trl  # noqa: E402

WORKERS = {"reinforge": worker_reinforge, "trl": worker_trl, "eval": worker_eval}


# ---- parent: orchestration and report -------------------------------------------------


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
        kinds = {str(run.get("cpu", {}).get("kind")) for run in runs}
        if len(kinds) > 1:
            print(f"error: the runs were measured on different CPU kinds: {', '.join(kinds)}")
            return 2
        settings = replace(Settings(**runs[0]["settings"]), level=args.level)
        try:
            seeds = join_sides([seed for run in runs for seed in run["seeds"]])
        except ValueError as exc:
            print(f"error: {exc}")
            return 2
        for seed in seeds:
            if seed.get("joined"):  # --only runs of one seed: their side-by-side table
                print(format_report(seed))
        print(
            format_summary(settings, seeds, summarize(settings, seeds, _untrained_accuracy(seeds)))
        )
        if "cpu" in runs[0]:
            print(f"\n  {cpu_kind.describe(runs[0]['cpu'])}")
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
