"""The hf engine's sampling in fp32 vs int8 (``model.hf.quantize: int8``), natively and
under an AVX2 cap, side by side in one run.

Why: where bf16 is not native the engine samples in fp32, and int8 dynamic quantisation
is the cheaper path the issue asks to try. What it buys (decode tokens/s) and what it
costs (the gap between the log-probs it samples with and the fp32 trainer's, which
importance-sampling truncation has to correct) are measured on the demo's own rollouts:
8 arithmetic questions x 8 replies of up to 32 tokens, SmolLM2-135M-Instruct, the
questions submitted at once as the explorer does.

Per setting: tokens generated over the engine's decode seconds (its ``stats``), the whole
batch's tokens/s, and the gap: every reply is re-scored by the engine's fp32 weights
(``score``: int8 leaves scoring in fp32, so that is exactly the trainer's fp32 forward)
and compared with the log-probs recorded while sampling (|log ratio| mean and max, and
k3 = mean(r - 1 - log r) with r = p_trainer / p_sampler).

The kinds: this process's (``native``), and ``capped`` in a child process started with
``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2`` (the
caps are read when torch starts). Rounds alternate the settings so load drift hits them
alike; each figure is the median over rounds.

Run::

    .venv/bin/python bench/int8_sampling.py --rounds 3 --out int8.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpu_kind  # bench/cpu_kind.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "arithmetic" / "data" / "train.jsonl"
TEMPLATE = "{prompt} Answer with just the number."
AVX2_CAP = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
}


def gap(recorded: list[float], scored: list[float]) -> tuple[float, float, float]:
    """(mean |log ratio|, max |log ratio|, k3) between sampler and trainer log-probs."""
    ratios = [t - s for s, t in zip(recorded, scored, strict=True)]
    k3 = [math.exp(x) - 1 - x for x in ratios]
    absolute = [abs(x) for x in ratios]
    return statistics.fmean(absolute), max(absolute), statistics.fmean(k3)


def one_batch(engine: Any, prompts: list[list[int]], group: int, seed: int) -> dict[str, float]:
    """The demo's rollouts once: tokens/s and the log-prob gap."""
    from reinforge.models.engine import SamplingParams

    for key in ("decode_s", "prefill_s", "generated_tokens"):
        engine.stats[key] = 0
    start = time.perf_counter()
    futures = [
        engine.submit(p, SamplingParams(n=group, max_tokens=32, temperature=1.0, seed=seed + i))
        for i, p in enumerate(prompts)
    ]
    replies = [f.result() for f in futures]
    wall = time.perf_counter() - start
    decode, generated = engine.stats["decode_s"], engine.stats["generated_tokens"]
    recorded, scored = [], []
    for prompt, completions in zip(prompts, replies, strict=True):
        for c in completions:
            recorded += c.logprobs
            scored += engine.score(prompt + c.token_ids)[len(prompt) - 1 :]
    mean, worst, k3 = gap(recorded, scored)
    return {
        "wall_s": wall,
        "tokens": generated,
        "tokens_per_s": generated / wall,
        "decode_tokens_per_s": generated / decode if decode else float("nan"),
        "abs_log_ratio_mean": mean,
        "abs_log_ratio_max": worst,
        "approx_kl_k3": k3,
    }


def measure(rounds: int, threads: int, prompts_n: int, group: int) -> dict[str, Any]:
    """Both settings in this process, alternating; per setting the list of rounds."""
    from reinforge.models.catalog import resolve_model_path
    from reinforge.models.engine import SamplingParams
    from reinforge.models.engines.hf import HFEngine

    torch.set_num_threads(threads)
    path = resolve_model_path("smollm2-135m-instruct")
    engines = {
        name: HFEngine(path, dtype="float32", quantize=q, seed=0, prefix_cache_tokens=0)
        for name, q in (("fp32", None), ("int8", "int8"))
    }
    tok = engines["fp32"].tokenizer
    rows = [json.loads(line) for line in DATA.open()][:prompts_n]
    prompts = [
        tok.encode(
            tok.render_chat([{"role": "user", "content": TEMPLATE.format(prompt=r["question"])}])
        )
        for r in rows
    ]
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in engines}
    try:
        for engine in engines.values():  # warm-up: first-call costs off the clock
            engine.generate(prompts[0], SamplingParams(n=2, max_tokens=4))
        for r in range(rounds):
            for name, engine in engines.items():
                runs[name].append(one_batch(engine, prompts, group, seed=100 * r))
                print(f"  [{name}: {runs[name][-1]}]", file=sys.stderr, flush=True)
    finally:
        for engine in engines.values():
            engine.close()
    return {"cpu": cpu_kind.capability(), "runs": runs, "load": os.getloadavg()}


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def report(kinds: dict[str, dict[str, Any]]) -> str:
    lines = []
    for result in kinds.values():
        lines.append(cpu_kind.describe(result["cpu"]))
        fp32 = medians(result["runs"]["fp32"])
        for name, runs in result["runs"].items():
            m = medians(runs)
            lines.append(
                f"  {name:<5} decode {m['decode_tokens_per_s']:7.1f} tok/s "
                f"({m['decode_tokens_per_s'] / fp32['decode_tokens_per_s']:.2f}x), batch "
                f"{m['tokens_per_s']:6.1f} tok/s, |log ratio| mean {m['abs_log_ratio_mean']:.4f} "
                f"max {m['abs_log_ratio_max']:.3f}, k3 {m['approx_kl_k3']:.5f} "
                f"(median of {len(runs)})"
            )
        lines.append(f"  load average at the end {result['load']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--kinds", default="native,capped", help="native, capped or both")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args()
    if args.child:  # one kind, in this process: JSON on stdout
        print(json.dumps(measure(args.rounds, args.threads, args.prompts, args.group)))
        return
    kinds: dict[str, dict[str, Any]] = {}
    for kind in args.kinds.split(","):
        env = {**os.environ, **(AVX2_CAP if kind == "capped" else {})}
        if kind == "native":
            for name in AVX2_CAP:
                env.pop(name, None)
        command = [sys.executable, __file__, "--child", *sys.argv[1:]]
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True, check=True)
        kinds[kind] = json.loads(done.stdout.strip().splitlines()[-1])
    print(report(kinds))
    if args.out:
        args.out.write_text(json.dumps(kinds, indent=2))


if __name__ == "__main__":
    main()
