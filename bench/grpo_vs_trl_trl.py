"""bench/grpo_vs_trl.py's TRL side: reinforge's tasks as TRL rows and the worker that
trains TRL's GRPOTrainer on them (split out of the script: house rules)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import cpu_kind  # noqa: E402  (bench/cpu_kind.py, beside this script)
from grpo_vs_trl_reinforge import _log, _save_policy, reinforge_config  # noqa: E402
from grpo_vs_trl_settings import Settings, resolve_precision  # noqa: E402

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
