"""One SFT step on shipped demonstrations, trainer setting against setting, in one run.

The agent examples train on long rows (the calculator agent's demonstrations are about
260 tokens, FrozenLake's up to 500) where the arithmetic demo trains on ~60, so the
trainer settings that were fastest for the demo need not be here. This tokenizes
``--rows`` demonstrations of ``--data`` with SmolLM2-135M-Instruct's chat template,
as ``mode: sft`` does, and times ``Trainer.train_step`` with the ``sft`` loss under
each setting, interleaved round by round so machine load drifts over all of them
alike (a fresh trainer each time, so every timed step is a first step).

Printed per setting: median seconds per step over ``--rounds`` rounds, the speed-up
over the first setting, tokens trained per second, and the loss.

Run::

    .venv/bin/python bench/sft_step.py                                   # the agent's rows
    .venv/bin/python bench/sft_step.py --data examples/frozen_lake/data/demonstrations.jsonl
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from reinforge.buffer.sft_dataset import read_conversations, tokenize_demonstrations
from reinforge.buffer.sft_dataset_config import SftDatasetConfig
from reinforge.models.catalog import resolve_model_path
from reinforge.models.tokenizer import HFChatTokenizer
from reinforge.models.wrapper.chat_prompts import ChatPrompts
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

REPO = Path(__file__).resolve().parents[1]
AGENT_DATA = REPO / "examples" / "agent" / "data" / "demonstrations.jsonl"

SETTINGS: dict[str, dict[str, Any]] = {
    "fp32, checkpointing (the examples')": {"gradient_checkpointing": True},
    "fp32": {},
    "fp32, sdpa attention": {"attn_implementation": "sdpa"},
    "bf16 autocast": {"mixed_precision": "bf16"},
    "bf16 autocast, checkpointing": {"mixed_precision": "bf16", "gradient_checkpointing": True},
}


def demonstrations(path: Path, rows: int, model_path: Path) -> tuple[list[Any], int]:
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(model_path, local_files_only=True)
    tokenizer = HFChatTokenizer(hf)
    config = SftDatasetConfig.model_validate(
        {"path": str(path), "limit": rows, "format": {"messages_key": "messages"}}
    )
    conversations = read_conversations(config)
    prompts = ChatPrompts(tokenizer, None)
    demos = tokenize_demonstrations(conversations, prompts.render_text, tokenizer.encode, 2048)
    return demos.experiences, hf.pad_token_id


def time_setting(model_path: Path, changes: dict[str, Any], exps: list[Any], pad: int, mb: int):
    cfg = TrainerConfig.model_validate(
        {"algorithm": "sft", "lr": 5e-5, "micro_batch_size": mb, **changes}
    )
    trainer = Trainer(model_path, cfg, pad_token_id=pad)
    start = time.perf_counter()
    metrics = trainer.train_step(copy.deepcopy(exps)).metrics
    seconds = time.perf_counter() - start
    del trainer
    return seconds, metrics.get("train/loss", float("nan"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=AGENT_DATA)
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--micro-batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", nargs="*", help="names of the settings to time (default: all)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model_path = resolve_model_path("smollm2-135m-instruct")
    exps, pad = demonstrations(args.data, args.rows, model_path)
    tokens = sum(len(e.tokens) for e in exps)
    print(
        f"{args.data.relative_to(REPO) if args.data.is_relative_to(REPO) else args.data}: "
        f"{len(exps)} rows, {tokens} tokens (longest {max(len(e.tokens) for e in exps)}), "
        f"micro-batch {args.micro_batch}, torch threads {args.threads}"
    )
    settings = {k: v for k, v in SETTINGS.items() if not args.only or k in args.only}
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in settings}
    for _ in range(args.rounds):
        for name, changes in settings.items():
            results[name].append(time_setting(model_path, changes, exps, pad, args.micro_batch))
    base = statistics.median(s for s, _ in results[next(iter(settings))])
    print(f"{'setting':<38} {'s/step':>8} {'speed-up':>9} {'tokens/s':>9} {'loss':>8}")
    for name, runs in results.items():
        median = statistics.median(s for s, _ in runs)
        loss = statistics.median(x for _, x in runs)
        print(f"{name:<38} {median:8.2f} {base / median:8.2f}x {tokens / median:9.0f} {loss:8.4f}")


if __name__ == "__main__":
    main()
