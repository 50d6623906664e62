"""bench/grpo_vs_trl.py's reinforge side: its config from the shared settings and the
worker that trains it in a fresh interpreter (split out of the script: house rules)."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from grpo_vs_trl_settings import GRPO_CONFIG, Settings  # noqa: E402


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
