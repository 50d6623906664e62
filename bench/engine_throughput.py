"""Throughput of the embedded HFEngine against one batched ``model.generate`` call.

Why: HFEngine exists because a static batch (``model.generate``) keeps decoding
rows that have already finished until the longest row ends, and because many
concurrent workflows should not have to wait for each other. This script checks
that the continuous-batching loop actually pays off on the real model.

Both sides get the same ragged chat prompts, the same sampling settings
(temperature 1, top_p 1, no top-k, natural stop at eos, ``--max-new-tokens``
cap), in the same process on the same weights. The order alternates between
repetitions so drift (thermal, other load) hits both equally. We report *useful*
tokens per second: tokens up to and including the first eos of each sample; what
``generate`` produces after a row's eos is padding work, not output.

Run::

    .venv/bin/python bench/engine_throughput.py --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import torch

from reinforge.models.catalog import resolve_model_path
from reinforge.models.engine import SamplingParams
from reinforge.models.engines.hf import HFEngine, load_causal_lm

QUESTIONS = [
    "Hi!",
    "What is 2 + 2?",
    "Name a color.",
    "Write a haiku about the sea.",
    "Explain in detail how photosynthesis works, step by step, for a high-school student.",
    "List five countries in Europe.",
    "Why is the sky blue?",
    "Translate 'good morning' into French.",
    "Write a short story about a robot who learns to paint, in about one hundred words.",
    "What is the capital of Japan?",
    "Give me three tips for writing clean Python code, with a short explanation for each.",
    "Say yes or no: is water wet?",
    "Describe the rules of chess briefly, including how each piece moves and how a game ends.",
    "What does CPU stand for?",
    "Summarise the plot of Romeo and Juliet.",
    "Compose a limerick about a cat who loves cheese and lives in a small apartment in Paris.",
]


@dataclass
class RunResult:
    """One timed pass of one side."""

    seconds: float
    useful_tokens: int
    mean_latency: float  # mean time from submission to completion of a request
    steps: int  # decode steps (forward passes after the prefill)
    mean_rows: float  # rows per decode step, on average
    cpu_seconds: float  # process CPU time: less sensitive than wall time to other load

    @property
    def tok_per_cpu_s(self) -> float:
        return self.useful_tokens / self.cpu_seconds

    @property
    def tok_per_s(self) -> float:
        return self.useful_tokens / self.seconds


def build_prompts(tokenizer: Any, count: int) -> list[list[int]]:
    """Chat-templated prompts of varied length (cycling the question list)."""
    prompts = []
    for i in range(count):
        question = QUESTIONS[i % len(QUESTIONS)]
        if i >= len(QUESTIONS):
            question = f"{question} (variant {i // len(QUESTIONS)})"
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": question}], add_generation_prompt=True, tokenize=False
        )
        prompts.append(tokenizer.encode(text, add_special_tokens=False))
    return prompts


def useful_length(tokens: list[int], eos_ids: set[int]) -> int:
    """Number of tokens up to and including the first eos (all if none)."""
    for i, tok in enumerate(tokens):
        if tok in eos_ids:
            return i + 1
    return len(tokens)


def run_engine(
    engine: HFEngine, prompts: list[list[int]], args: argparse.Namespace, seed: int
) -> RunResult:
    """Submit every prompt at once (as concurrent workflows would) and wait for all."""
    eos = set(engine.tokenizer.eos_token_ids)
    done_at: list[float] = [0.0] * len(prompts)
    lock = threading.Lock()

    def stamp(i: int) -> Any:
        def callback(_: Future) -> None:
            with lock:
                done_at[i] = time.perf_counter()

        return callback

    before = dict(engine.stats)
    cpu_start = time.process_time()
    start = time.perf_counter()
    futures = []
    for i, ids in enumerate(prompts):
        params = SamplingParams(
            n=args.n, temperature=1.0, top_p=1.0, max_tokens=args.max_new_tokens, seed=seed + i
        )
        fut = engine.submit(ids, params)
        fut.add_done_callback(stamp(i))
        futures.append(fut)
    results = [f.result() for f in futures]
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu_start
    useful = sum(useful_length(c.token_ids, eos) for comps in results for c in comps)
    latency = statistics.mean(t - start for t in done_at)
    steps = int(engine.stats["decode_steps"] - before["decode_steps"])
    sampled = engine.stats["generated_tokens"] - before["generated_tokens"]
    # every sampled token but the first of each row comes from a decode step
    mean_rows = (sampled - len(prompts) * args.n) / max(steps, 1)
    return RunResult(seconds, useful, latency, steps, mean_rows, cpu_seconds)


def run_generate(
    model: Any,
    pad_id: int,
    eos_ids: list[int],
    prompts: list[list[int]],
    args: argparse.Namespace,
    seed: int,
) -> RunResult:
    """One left-padded ``model.generate`` call over all prompts (n return sequences each)."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, p in enumerate(prompts):
        ids[i, width - len(p) :] = torch.tensor(p)
        mask[i, width - len(p) :] = 1
    torch.manual_seed(seed)
    eos = set(eos_ids)
    cpu_start = time.process_time()
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(
            input_ids=ids,
            attention_mask=mask,
            do_sample=True,
            temperature=1.0,
            top_p=1.0,
            top_k=0,
            max_new_tokens=args.max_new_tokens,
            num_return_sequences=args.n,
            eos_token_id=eos_ids,
            pad_token_id=pad_id,
        )
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu_start
    useful = sum(useful_length(row[width:].tolist(), eos) for row in out)
    steps = out.shape[1] - width - 1
    return RunResult(seconds, useful, seconds, steps, float(out.shape[0]), cpu_seconds)


def describe(r: RunResult) -> str:
    return (
        f"{r.tok_per_s:6.1f} tok/s ({r.useful_tokens} tok in {r.seconds:.2f} s, "
        f"cpu {r.cpu_seconds:.1f} s, {r.steps} steps x {r.mean_rows:.1f} rows)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n", type=int, default=1, help="samples per prompt (shared prefill)")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    parser.add_argument(
        "--attn", default=None, help="attention implementation for both sides (sdpa, eager)"
    )
    parser.add_argument("--no-warmup", action="store_true")
    args = parser.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    path = resolve_model_path(args.model)
    model, tokenizer = load_causal_lm(path, "cpu", torch.float32)
    if args.attn:
        model.set_attn_implementation(args.attn)
    engine = HFEngine(
        model=model,
        tokenizer=tokenizer,
        device="cpu",
        max_batch_size=max(64, args.requests * args.n),
    )
    prompts = build_prompts(tokenizer, args.requests)
    pad_id = engine.tokenizer.pad_token_id
    eos_ids = engine.tokenizer.eos_token_ids
    lengths = sorted(len(p) for p in prompts)
    print(
        f"model={args.model} attn={model.config._attn_implementation} threads={torch.get_num_threads()} "
        f"requests={args.requests} n={args.n} max_new_tokens={args.max_new_tokens} "
        f"prompt_len min/median/max={lengths[0]}/{lengths[len(lengths) // 2]}/{lengths[-1]}"
    )

    sides = {
        "engine": lambda seed: run_engine(engine, prompts, args, seed),
        "generate": lambda seed: run_generate(model, pad_id, eos_ids, prompts, args, seed),
    }
    if not args.no_warmup:
        for fn in sides.values():
            fn(-1)
    results: dict[str, list[RunResult]] = {name: [] for name in sides}
    for rep in range(args.repeats):
        order = ["engine", "generate"] if rep % 2 == 0 else ["generate", "engine"]
        seed = 1000 * (rep + 1)
        for name in order:
            results[name].append(sides[name](seed))
        eng, gen = results["engine"][-1], results["generate"][-1]
        print(
            f"rep {rep}: engine {describe(eng)}  generate {describe(gen)}  "
            f"ratio {eng.tok_per_s / gen.tok_per_s:.2f}x",
            flush=True,
        )
    engine.close()

    def med(name: str, attr: str) -> float:
        return statistics.median(getattr(r, attr) for r in results[name])

    print("--- medians ---")
    for name in sides:
        print(
            f"{name:9s} useful {med(name, 'tok_per_s'):7.1f} tok/s  "
            f"{med(name, 'tok_per_cpu_s'):6.1f} tok/cpu-s  "
            f"time-to-completion {med(name, 'seconds'):.2f} s  "
            f"mean request latency {med(name, 'mean_latency'):.2f} s  "
            f"useful tokens {med(name, 'useful_tokens'):.0f}"
        )

    def ratio(metric: Any) -> float:
        pairs = zip(results["engine"], results["generate"], strict=True)
        return statistics.median(metric(e, g) for e, g in pairs)

    print(
        f"ratio engine/generate, useful tok/s:     {ratio(lambda e, g: e.tok_per_s / g.tok_per_s):.2f}x"
    )
    print(
        f"ratio engine/generate, useful tok/cpu-s: "
        f"{ratio(lambda e, g: e.tok_per_cpu_s / g.tok_per_cpu_s):.2f}x"
    )
    print(
        f"time-to-completion generate/engine:      {ratio(lambda e, g: g.seconds / e.seconds):.2f}x"
    )
    print("(medians of per-repetition ratios)")


if __name__ == "__main__":
    main()
