"""Does one reinforge GRPO update learn what TRL's does? Piece by piece, on the same data.

Why: ``bench/grpo_vs_trl.py`` compares whole runs, whose accuracy spreads by ~0.1
from seed to seed. This script holds everything fixed and compares the pieces:

``sampling``
    Step-0 training reward of the same prompts sampled by reinforge's HF engine
    (bf16 as in the demo, and fp32) and by ``model.generate`` as TRL calls it (fp32
    weights, under bf16 autocast as TRL's ``bf16=True`` runs it), several seeds.
``update``
    One fixed batch of demo rollouts (``--prompts`` x ``--group`` from the bf16
    engine, scored by ``accuracy_reward``) fed to reinforge's ``Trainer`` under
    several settings and to TRL's ``GRPOTrainer.compute_loss`` (``loss_type="dapo"``,
    group-scaled advantages, fp32 and bf16); each gradient (before clipping) is
    compared with the exact fp32 on-policy gradient: cosine similarity and norm
    ratio per parameter group, sign agreement, the share of tokens the PPO clip
    zeroed.

Run::

    .venv/bin/python bench/grpo_parity.py update     # about 3 min on 2 cores; needs trl
    .venv/bin/python bench/grpo_parity.py sampling   # about 4 min per seed

Measured numbers: docs/benchmarks.md ("Learning per step").
"""

from __future__ import annotations

import argparse
import concurrent.futures
import copy
import json
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from reinforge.core import Experience
from reinforge.core.eid import EID
from reinforge.models.catalog import resolve_model_path
from reinforge.models.engines.hf import HFEngine
from reinforge.models.model_wrapper import ModelWrapper
from reinforge.rewards.accuracy_reward import AccuracyReward
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

DATA = Path(__file__).resolve().parents[1] / "examples" / "arithmetic" / "data" / "train.jsonl"
TEMPLATE = "{} Answer with just the number."
#: the demo's trainer section (examples/arithmetic/grpo.yaml); the variants change it
DEMO = {
    "algorithm": "grpo",
    "algorithm_args": {"kl_loss": "none"},
    "lr": 2e-5,
    "warmup_steps": 2,
    "micro_batch_size": 16,
}
BF16 = {"mixed_precision": "bf16", "gradient_checkpointing": True}
#: name -> (trainer changes, drop flat groups as reward_std_filter does)
VARIANTS: dict[str, tuple[dict[str, Any], bool]] = {
    "reinforge: the demo's (bf16, pi_old from the trainer, std filter)": (BF16, True),
    "reinforge: the demo's with pi_old from the bf16 sampler (before)": (
        {**BF16, "old_logprobs": "sampler"},
        True,
    ),
    "reinforge: bf16, every group (no std filter)": (BF16, False),
    "reinforge: fp32, pi_old from the bf16 sampler": ({"old_logprobs": "sampler"}, True),
}
EXACT = "reinforge: fp32, every group (exact on-policy gradient)"


def _rows(start: int, count: int) -> list[dict[str, str]]:
    rows = [json.loads(line) for line in DATA.open(encoding="utf-8")]
    return rows[start : start + count]


def _messages(row: dict[str, str]) -> list[dict[str, str]]:
    return [{"role": "user", "content": TEMPLATE.format(row["question"])}]


def sample_engine(
    model_path: Path, rows: list[dict], group: int, dtype: str, seed: int
) -> list[Experience]:
    """``group`` replies per row from the HF engine, scored; eids group them by row."""
    reward = AccuracyReward()
    engine = HFEngine(model_path, dtype=dtype, seed=seed)
    try:
        wrapper = ModelWrapper(engine, default_max_tokens=32)
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            replies = list(
                pool.map(lambda r: wrapper.chat(_messages(r), n=group, temperature=1.0), rows)
            )
    finally:
        engine.close()
    exps = []
    for task, (row, group_exps) in enumerate(zip(rows, replies, strict=True)):
        for run, exp in enumerate(group_exps):
            exp.eid = EID(batch=1, task=task, run=run)
            exp.reward = reward(response=exp.response_text, truth=row["answer"])["accuracy"]
            exps.append(exp)
    return exps


def sample_generate(model_path: Path, rows: list[dict], group: int, seed: int) -> list[float]:
    """Rewards of ``model.generate`` samples as TRL draws them (fp32 weights, bf16 autocast)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_path, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32).eval()
    config = GenerationConfig(
        max_new_tokens=32,
        do_sample=True,
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    reward = AccuracyReward()
    scores = []
    for start in range(0, len(rows), 8):
        chunk = rows[start : start + 8]
        texts = [
            tokenizer.apply_chat_template(_messages(r), add_generation_prompt=True, tokenize=False)
            for r in chunk
            for _ in range(group)
        ]
        batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            out = model.generate(**batch, generation_config=config)
        replies = tokenizer.batch_decode(
            out[:, batch["input_ids"].shape[1] :], skip_special_tokens=True
        )
        for i, text in enumerate(replies):
            scores.append(reward(response=text, truth=chunk[i // group]["answer"])["accuracy"])
    return scores


def cmd_sampling(args: argparse.Namespace) -> None:
    model_path = resolve_model_path(args.model)
    rows = _rows(0, args.prompts)
    results: dict[str, list[float]] = {}
    for seed in range(args.seeds):
        for name, draw in (
            (
                "reinforge HF engine, bf16 (the demo's)",
                lambda s: sample_engine(model_path, rows, args.group, "bfloat16", s),
            ),
            (
                "reinforge HF engine, fp32",
                lambda s: sample_engine(model_path, rows, args.group, "float32", s),
            ),
            (
                "model.generate, bf16 autocast (TRL's)",
                lambda s: sample_generate(model_path, rows, args.group, s),
            ),
        ):
            start = time.monotonic()
            out = draw(seed)
            scores = [e.reward for e in out] if out and isinstance(out[0], Experience) else out
            results.setdefault(name, []).append(statistics.fmean(scores))
            print(
                f"seed {seed}  {name:<42} reward {results[name][-1]:.3f}  ({time.monotonic() - start:.0f} s)",
                flush=True,
            )
    print(
        f"\nstep-0 training reward, {args.prompts} prompts x {args.group} samples, mean over {args.seeds} seed(s):"
    )
    for name, values in results.items():
        print(
            f"  {name:<42} {statistics.fmean(values):.3f}  ({', '.join(f'{v:.3f}' for v in values)})"
        )


def _flat_groups_dropped(exps: list[Experience], group: int) -> list[Experience]:
    kept = []
    for i in range(0, len(exps), group):
        members = exps[i : i + group]
        if len({e.reward for e in members}) > 1:
            kept.extend(members)
    return kept


def reinforge_gradient(
    model_path: Path, changes: dict[str, Any], exps: list[Experience], pad: int
) -> tuple[dict[str, torch.Tensor], dict[str, float]]:
    """The gradient a reinforge step hands to clipping (before it), and the step's metrics."""
    trainer = Trainer(
        model_path, TrainerConfig.model_validate({**DEMO, **changes}), pad_token_id=pad
    )
    grads: dict[str, torch.Tensor] = {}
    clip = torch.nn.utils.clip_grad_norm_

    def record(params: Any, limit: float) -> torch.Tensor:
        for name, p in trainer.model.named_parameters():
            if p.grad is not None:
                grads[name] = p.grad.detach().double().clone()
        return clip(params, limit)

    torch.nn.utils.clip_grad_norm_ = record
    try:
        metrics = trainer.train_step(copy.deepcopy(exps)).metrics
    finally:
        torch.nn.utils.clip_grad_norm_ = clip
    return grads, metrics


def trl_gradient(
    model_path: Path, exps: list[Experience], group: int, micro: int, bf16: bool
) -> dict[str, torch.Tensor]:
    """The gradient of TRL's GRPO loss (``dapo``, group-scaled advantages) on ``exps``,
    accumulated over micro-batches as its ``training_step`` does."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    steps = len(exps) // micro
    config = GRPOConfig(
        output_dir="/tmp/grpo_parity_trl",
        use_cpu=True,
        bf16=bf16,
        gradient_checkpointing=bf16,
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=steps,
        num_generations=group,
        max_completion_length=32,
        beta=0.0,
        epsilon=0.2,
        loss_type="dapo",
        scale_rewards="group",
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
    )
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=lambda completions, **_: [0.0] * len(completions),
        args=config,
        train_dataset=Dataset.from_list([{"prompt": [{"role": "user", "content": "-"}]}] * 8),
    )
    trainer.model.train()
    rewards = torch.tensor([float(e.reward) for e in exps]).view(-1, group)
    advantages = (rewards - rewards.mean(1, keepdim=True)) / (rewards.std(1, keepdim=True) + 1e-4)
    advantages = advantages.view(-1)
    pad = trainer.processing_class.pad_token_id
    width_p = max(e.prompt_length for e in exps)
    width_c = max(e.response_length for e in exps)
    tokens = torch.tensor(float(sum(e.response_length for e in exps)))
    trainer.current_gradient_accumulation_steps = steps
    for start in range(0, len(exps), micro):
        part = exps[start : start + micro]
        prompt = torch.full((len(part), width_p), pad)
        prompt_mask = torch.zeros(len(part), width_p, dtype=torch.long)
        completion = torch.full((len(part), width_c), pad)
        completion_mask = torch.zeros(len(part), width_c, dtype=torch.long)
        for row, exp in enumerate(part):
            p, c = exp.tokens[: exp.prompt_length], exp.tokens[exp.prompt_length :]
            prompt[row, width_p - len(p) :], prompt_mask[row, width_p - len(p) :] = p, 1
            completion[row, : len(c)], completion_mask[row, : len(c)] = c, 1
        inputs = {
            "prompt_ids": prompt,
            "prompt_mask": prompt_mask,
            "completion_ids": completion,
            "completion_mask": completion_mask,
            "advantages": advantages[start : start + micro],
            "num_items_in_batch": tokens,
            "old_per_token_logps": None,
        }
        with trainer.compute_loss_context_manager():
            loss = trainer.compute_loss(trainer.model, inputs, num_items_in_batch=tokens)
        trainer.accelerator.backward(loss)  # dapo's loss is already scaled for accumulation
    return {
        n: p.grad.detach().double().clone()
        for n, p in model.named_parameters()
        if p.grad is not None
    }


def _group_of(name: str) -> str:
    if "embed" in name:
        return "embeddings"
    if "norm" in name:
        return "norms"
    return "attention" if "attn" in name else "mlp"


def compare(grads: dict[str, torch.Tensor], exact: dict[str, torch.Tensor]) -> dict[str, Any]:
    """Cosine, norm ratio and sign agreement against ``exact``, overall and per group."""
    names = sorted(exact)
    a = torch.cat([grads[n].flatten() for n in names])
    b = torch.cat([exact[n].flatten() for n in names])
    per_group = {}
    for group in ("embeddings", "attention", "mlp", "norms"):
        members = [n for n in names if _group_of(n) == group]
        ga = torch.cat([grads[n].flatten() for n in members])
        gb = torch.cat([exact[n].flatten() for n in members])
        per_group[group] = (
            float(torch.nn.functional.cosine_similarity(ga, gb, dim=0)),
            float(ga.norm() / gb.norm()),
        )
    return {
        "cosine": float(torch.nn.functional.cosine_similarity(a, b, dim=0)),
        "norm_ratio": float(a.norm() / b.norm()),
        "sign_agreement": float((torch.sign(a) == torch.sign(b)).double().mean()),
        "norm": float(a.norm()),
        "groups": per_group,
    }


def cmd_update(args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    model_path = resolve_model_path(args.model)
    exps = sample_engine(
        model_path, _rows(args.offset, args.prompts), args.group, "bfloat16", args.seed
    )
    per_group = [
        sum(e.reward for e in exps[i : i + args.group]) for i in range(0, len(exps), args.group)
    ]
    print(f"batch: {len(exps)} rollouts from the bf16 engine; correct per group {per_group}")
    pad = 2  # SmolLM2's <|im_end|>, what collate pads with in the demo
    exact, _ = reinforge_gradient(model_path, {"old_logprobs": "trainer"}, exps, pad)
    rows: dict[str, tuple[dict[str, Any], dict[str, float]]] = {}
    for name, (changes, drop_flat) in VARIANTS.items():
        batch = _flat_groups_dropped(exps, args.group) if drop_flat else exps
        grads, metrics = reinforge_gradient(model_path, changes, batch, pad)
        rows[name] = (compare(grads, exact), metrics)
    try:
        for bf16 in (False, True):
            name = f"TRL GRPOTrainer, {'bf16 autocast' if bf16 else 'fp32'}, every group"
            rows[name] = (
                compare(trl_gradient(model_path, exps, args.group, args.micro_batch, bf16), exact),
                {},
            )
    except ImportError:
        print("(trl is not installed: pip install -e '.[bench]' for the TRL rows)")
    print(f"\nagainst the exact gradient ({EXACT}; norm {compare(exact, exact)['norm']:.3f}):")
    print(f"  {'':<66}{'cosine':>8}{'norm x':>8}{'signs':>8}{'clipped':>9}{'sampler k3':>11}")
    for name, (c, m) in rows.items():
        clipped = m.get("train/policy/clip_frac")
        k3 = m.get("train/sampler/approx_kl_k3")
        print(
            f"  {name:<66}{c['cosine']:>8.4f}{c['norm_ratio']:>8.3f}{c['sign_agreement']:>8.3f}"
            f"{'-' if clipped is None else f'{clipped:.4f}':>9}{'-' if k3 is None else f'{k3:.4f}':>11}"
        )
        groups = ", ".join(f"{g} {cos:.4f}/{ratio:.2f}" for g, (cos, ratio) in c["groups"].items())
        print(f"      per group (cosine/norm x): {groups}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["sampling", "update"])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--micro-batch", type=int, default=16)
    parser.add_argument("--offset", type=int, default=8, help="first training row of the batch")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, default=2, help="sampling: seeds per sampler")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    (cmd_sampling if args.what == "sampling" else cmd_update)(args)


if __name__ == "__main__":
    main()
