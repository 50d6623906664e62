"""The update phase of a demo GRPO step, setting against setting, in one invocation.

Samples one demo-shaped batch once (``--prompts`` arithmetic questions x
``--group`` replies of up to 32 tokens from SmolLM2-135M-Instruct, the demo's
prompt template), then times ``Trainer.train_step`` on copies of it under each
setting, interleaved round by round so machine load drifts over all of them
alike. Each setting starts from the same weights every round (a fresh trainer),
so every timed step is the demo's first step.

Printed per setting: median seconds per update over ``--rounds`` rounds, the
speed-up over the first setting, the engine-to-trainer log-prob ratio (1.0 =
the trainer reproduces the rollout log-probs), the loss, and the peak RSS growth
of the process while that setting ran.

Run::

    .venv/bin/python bench/update_phase.py            # about 3-5 min on 2 cores
"""

from __future__ import annotations

import argparse
import copy
import json
import resource
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
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

DATA = Path(__file__).resolve().parents[1] / "examples" / "arithmetic" / "data" / "train.jsonl"

#: the demo's trainer section without its speed settings (fp32, GRPO with its KL term
#: against a reference model), plus each setting's changes
DEMO = {"algorithm": "grpo", "lr": 2e-5, "warmup_steps": 2, "micro_batch_size": 16}
NO_KL = {"kl_loss": "none"}
#: the setting named FULL_VOCAB runs with the vocabulary projection over every column
#: from the first response position on, as the trainer did before it projected only
#: the response positions (``token_logprobs(..., only=None)``)
FULL_VOCAB = "fp32, full-width logits (as before)"
SETTINGS: dict[str, dict[str, Any]] = {
    FULL_VOCAB: {"attn_implementation": "sdpa"},
    "fp32": {"attn_implementation": "sdpa"},
    "bf16 autocast, sdpa attention": {"mixed_precision": "bf16", "attn_implementation": "sdpa"},
    "bf16 autocast, auto attention (eager here)": {"mixed_precision": "bf16"},
    "bf16, auto attention, checkpointing, KL": {
        "mixed_precision": "bf16",
        "gradient_checkpointing": True,
    },
    "the demo's: bf16, auto, checkpointing, no KL": {
        "mixed_precision": "bf16",
        "gradient_checkpointing": True,
        "algorithm_args": NO_KL,
    },
}


def sample_batch(model_path: Path, prompts: int, group: int) -> list[Experience]:
    rows = [json.loads(line) for line in DATA.open()][:prompts]
    engine = HFEngine(model_path, dtype="float32", seed=0)
    try:
        wrapper = ModelWrapper(engine, default_max_tokens=32)
        exps: list[Experience] = []
        for task, row in enumerate(rows):
            content = f"{row['question']} Answer with just the number."
            replies = wrapper.chat([{"role": "user", "content": content}], n=group, temperature=1.0)
            for run, exp in enumerate(replies):
                exp.eid = EID(batch=1, task=task, run=run)
                exp.reward = float(row["answer"] in (exp.response_text or ""))
                exps.append(exp)
        return exps
    finally:
        engine.close()


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def time_setting(
    model_path: Path, changes: dict[str, Any], batch: list[Experience], pad: int
) -> dict[str, float]:
    cfg = TrainerConfig.model_validate({**DEMO, **changes})
    trainer = Trainer(model_path, cfg, pad_token_id=pad)
    exps = copy.deepcopy(batch)
    start = time.perf_counter()
    metrics = trainer.train_step(exps).metrics
    seconds = time.perf_counter() - start
    del trainer
    return {
        "seconds": seconds,
        "ratio": metrics.get("train/sampler/ratio_mean", float("nan")),
        "loss": metrics["train/loss"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model_path = resolve_model_path("smollm2-135m-instruct")
    batch = sample_batch(model_path, args.prompts, args.group)
    tokens = sum(len(e.tokens) for e in batch)
    print(f"batch: {len(batch)} experiences, {tokens} tokens, torch threads {args.threads}")
    from transformers import AutoTokenizer

    pad = AutoTokenizer.from_pretrained(model_path, local_files_only=True).pad_token_id
    results: dict[str, list[dict[str, float]]] = {name: [] for name in SETTINGS}
    rss: dict[str, float] = {}
    from reinforge.trainer import trainer as trainer_module

    packed = trainer_module.token_logprobs

    def full_width(model: Any, batch: Any, with_logits: bool = False, only: Any = None) -> Any:
        return packed(model, batch, with_logits=with_logits, only=None)

    for _ in range(args.rounds):
        for name, changes in SETTINGS.items():
            before = peak_rss_mb()
            trainer_module.token_logprobs = full_width if name == FULL_VOCAB else packed
            results[name].append(time_setting(model_path, changes, batch, pad))
            trainer_module.token_logprobs = packed
            rss[name] = max(rss.get(name, 0.0), peak_rss_mb() - before)
    base = statistics.median(r["seconds"] for r in results[next(iter(SETTINGS))])
    print(f"{'setting':<46} {'s/update':>9} {'speed-up':>9} {'ratio':>7} {'loss':>8} {'RSS+MB':>7}")
    for name, runs in results.items():
        median = statistics.median(r["seconds"] for r in runs)
        print(
            f"{name:<46} {median:9.2f} {base / median:8.2f}x "
            f"{statistics.median(r['ratio'] for r in runs):7.4f} "
            f"{statistics.median(r['loss'] for r in runs):8.4f} {rss[name]:7.0f}"
        )
    print(f"peak RSS of the process: {peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
