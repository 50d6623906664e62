"""Where a demo step's time goes, against what this CPU's matmuls can do, in one run.

Why: on a 2-core CPU the demo's training step takes seconds, and whether that is
the model's arithmetic or overhead around it decides what to make faster. This
script times one exploring step and the training steps of the demo
(``examples/arithmetic/grpo.yaml``: 8 questions x 8 replies of up to 32 tokens from
SmolLM2-135M-Instruct, the demo's trainer section) phase by phase, counts their
floating-point operations, and measures this machine's matmul GFLOP/s at the
precisions involved, all in the same process, so load from other processes hits
every figure alike. It prints the CPU's kind (``cpu_kind.py``) with the load.

Exploring step: the 8 x 8 rollouts as the explorer sends them (concurrent chat
requests that the hf engine batches), timed as prefill, decode forward, of which the
vocabulary projection (logits), sampling, and the reward (math-verify) afterwards.
Its FLOPs are estimated from the tokens (2 x parameters per token, plus attention);
the engine runs in its own thread, where torch's FLOP counter does not see.

Training step: ``Trainer.train_step`` on the sampled batch (every group kept; the
demo's ``reward_std_filter`` would drop the groups whose replies all got the same
reward), a fresh trainer per timed step so each is the demo's first step; the
settings alternate round by round so load drift hits them alike. Phases: preparation
(advantages, ordering, collation, the prompt-sharing layout), the reference's passes
(none in the demo: no KL term; the ``+KL`` setting has them), the forward passes (of
which the vocabulary projection), the backward (of which the recomputation of
decoder layers and of logits under activation checkpointing), the optimizer (clip +
AdamW) and the rest. π_old costs no pass of its own: the demo's ``old_logprobs:
trainer`` takes it from the first forward. FLOPs are counted by
``torch.utils.flop_counter`` on an extra step of each setting (matmuls and attention;
elementwise work is not counted).

Settings: the demo's (prompt sharing on, the default), the same with
``share_prompts: false``, and, with ``--fp32``, both in fp32 as an AVX2-only CPU runs
them (``auto`` picks fp32 there), and with ``--kl`` the demo plus a KL term.

An AVX2 CPU can be stood in for by capping this one's kernels (``cpu_kind.py``): with
``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2`` set,
bf16 is emulated, ``auto`` is fp32, and the kind is printed as ``AVX2 (capped on an
AVX-512 BF16 CPU)``.

Run::

    .venv/bin/python bench/step_profile.py             # ~5 min on 2 idle cores
    .venv/bin/python bench/step_profile.py --fp32 --kl --rounds 3
    ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 \
      .venv/bin/python bench/step_profile.py --rounds 1   # as on an AVX2 CPU
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpu_kind  # bench/cpu_kind.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "arithmetic" / "grpo.yaml"
DATA = ROOT / "examples" / "arithmetic" / "data" / "train.jsonl"
TEMPLATE = "{prompt} Answer with just the number."


class Clock:
    """Seconds per phase name; ``span`` nests (a phase's time counts in its parent too)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.in_backward = False

    @contextmanager
    def span(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - start

    def wrap(self, obj: Any, method: str, name: str | Callable[[], str]) -> None:
        """Time every call of ``obj.method`` (an instance attribute shadows the class's)."""
        inner = getattr(obj, method)

        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.span(name() if callable(name) else name):
                return inner(*args, **kwargs)

        setattr(obj, method, timed)

    def hook(self, module: torch.nn.Module, name: str) -> None:
        """Time each call of ``module``, under ``name`` in the forward and
        ``name + ' recompute'`` while a backward runs (activation checkpointing)."""
        starts: list[float] = []

        def before(*_: Any) -> None:
            starts.append(time.perf_counter())

        def after(*_: Any) -> None:
            phase = f"{name} recompute" if self.in_backward else name
            self.seconds[phase] += time.perf_counter() - starts.pop()

        module.register_forward_pre_hook(before)
        module.register_forward_hook(after)


def matmul_gflops(dtype: torch.dtype, m: int, k: int, n: int, seconds: float = 2.0) -> float:
    """Best GFLOP/s of an ``[m, k] x [k, n]`` matmul over ~``seconds`` of repeats."""
    a, b = torch.randn(m, k).to(dtype), torch.randn(k, n).to(dtype)
    for _ in range(3):
        a @ b
    best, spent = 0.0, 0.0
    while spent < seconds:
        start = time.perf_counter()
        a @ b
        took = time.perf_counter() - start
        spent += took
        best = max(best, 2.0 * m * k * n / took / 1e9)
    return best


# ---- the exploring step -----------------------------------------------------------------


def explore_step(model_path: Path, dtype: str, prompts: int, group: int) -> tuple[list, dict]:
    """The demo's rollouts of one step, timed by phase; the experiences (with rewards)
    and a dict of seconds, token counts and estimated FLOPs."""
    from reinforge.core.eid import EID
    from reinforge.models.engines.hf import HFEngine
    from reinforge.models.model_wrapper import ModelWrapper
    from reinforge.rewards.accuracy_reward import AccuracyReward

    rows = [json.loads(line) for line in DATA.open()][:prompts]
    engine = HFEngine(model_path, dtype=dtype, seed=0, prefix_cache_tokens=0)
    clock = Clock()
    clock.wrap(engine, "_prefill", "prefill (forward + first sample)")
    clock.wrap(engine, "_decode_step", "decode steps (forward + sample)")
    clock.wrap(engine, "_sample", "  of both: sampling")
    clock.hook(engine.model.get_output_embeddings(), "  of both: logits (vocabulary projection)")
    wrapper = ModelWrapper(engine, default_max_tokens=32)

    async def rollouts() -> list[list[Any]]:
        asks = [{"role": "user", "content": TEMPLATE.format(prompt=r["question"])} for r in rows]
        return await asyncio.gather(
            *(wrapper.chat_async([m], n=group, temperature=1.0) for m in asks)
        )

    try:  # warm-up: first-call costs (allocator, kernels) off the clock
        wrapper.chat([{"role": "user", "content": "1 + 1?"}], n=2, max_tokens=4)
        clock.seconds.clear()
        start = time.perf_counter()
        groups = asyncio.run(rollouts())
        wall = time.perf_counter() - start
        params = sum(p.numel() for p in engine.model.parameters())
        head = engine.model.get_output_embeddings().weight.numel()
        config = engine.model.config
    finally:
        engine.close()
    reward = AccuracyReward()
    reward(response="1", truth="1")  # its first call imports and warms math-verify
    exps = []
    with clock.span("reward (math-verify)"):
        for task, (row, replies) in enumerate(zip(rows, groups, strict=True)):
            for run, exp in enumerate(replies):
                exp.eid = EID(batch=1, task=task, run=run)
                exp.reward = reward(response=exp.response_text, truth=str(row["answer"]))[
                    "accuracy"
                ]
                exps.append(exp)
    generated = sum(e.response_length for e in exps)
    prompt_tokens = sum(e.prompt_length for e in exps[::group])  # each prompt prefilled once
    # 2 FLOPs per weight per token (the head once per generated token; the prefill's
    # logits only at the last position), plus attention over the context per layer
    body = params - head * (0 if config.tie_word_embeddings else 1) - head
    context = sum(e.prompt_length + e.response_length / 2 for e in exps) / max(len(exps), 1)
    attn = 4 * config.num_hidden_layers * config.hidden_size * context
    flops = 2 * body * (prompt_tokens + generated) + 2 * head * generated + attn * generated
    return exps, {
        "wall": wall,
        "seconds": dict(clock.seconds),
        "generated": generated,
        "prompt_tokens": prompt_tokens,
        "flops": flops,
        "accuracy": sum(e.reward for e in exps) / len(exps),
    }


# ---- the training step ------------------------------------------------------------------


def trainer_config(changes: dict[str, Any]) -> Any:
    from reinforge.config import load_config

    base = load_config(DEMO).trainer.model_dump()
    base.update({k: v for k, v in changes.items() if k != "algorithm_args"})
    base["algorithm_args"] = {**base["algorithm_args"], **changes.get("algorithm_args", {})}
    from reinforge.trainer.trainer_config import TrainerConfig

    return TrainerConfig.model_validate(base)


def instrument(trainer: Any) -> Clock:
    """Time the trainer's phases (see the module docstring) on this trainer only."""
    clock = Clock()
    clock.wrap(trainer.planner, "plan", "preparation (advantages, order, collate, layout)")
    clock.wrap(trainer, "_ref_logprobs", "  of which reference passes")
    clock.wrap(trainer.forward_module, "forward", "forward passes (policy)")
    clock.wrap(trainer.learner, "optimizer_step", "optimizer (clip + AdamW)")
    clock.wrap(trainer, "_housekeeping", "housekeeping (free memory)")
    backward = trainer.learner.backward

    def timed_backward(loss: torch.Tensor) -> None:
        clock.in_backward = True
        try:
            with clock.span("backward"):
                backward(loss)
        finally:
            clock.in_backward = False

    trainer.learner.backward = timed_backward
    model = trainer.model
    clock.hook(model.get_output_embeddings(), "logits")
    base = model.get_base_model() if hasattr(model, "peft_config") else model
    for layer in base.get_decoder().layers:
        clock.hook(layer.self_attn, "decoder")
        clock.hook(layer.mlp, "decoder")
    return clock


def train_step(model_path: Path, changes: dict, batch: list, pad: int) -> dict[str, Any]:
    from reinforge.trainer.trainer import Trainer

    trainer = Trainer(model_path, trainer_config(changes), pad_token_id=pad)
    clock = instrument(trainer)
    start = time.perf_counter()
    metrics = trainer.train_step(copy.deepcopy(batch)).metrics
    seconds = dict(clock.seconds)
    seconds["step"] = time.perf_counter() - start
    del trainer, clock
    gc.collect()  # the timing wrappers hold the trainer in a cycle: free it before the next
    return {"seconds": seconds, "metrics": metrics}


def step_flops(model_path: Path, changes: dict, batch: list, pad: int) -> dict[str, float]:
    """FLOPs (matmuls, attention) of one step's forward passes, counted, and of the
    step: a matmul's backward is two matmuls of its size, so backward = 2 x forward,
    and checkpointing recomputes the forward once more (decoder layers and logits)."""
    from torch.utils.flop_counter import FlopCounterMode

    from reinforge.trainer.trainer import Trainer

    cfg = trainer_config(changes)
    trainer = Trainer(model_path, cfg, pad_token_id=pad)
    plan = trainer.planner.plan(copy.deepcopy(batch), trainer.model_version)
    with FlopCounterMode(display=False) as counter, torch.no_grad(), trainer._autocast():
        for b in (mb.batch.to(trainer.device) for mb in plan.shares[0].micro_batches):
            trainer._use_attention(trainer.model, b)
            trainer.forward_module(b, only=b.loss_mask)
    forward = float(counter.get_total_flops())
    recompute = forward if cfg.gradient_checkpointing else 0.0
    return {"forward": forward, "recompute": recompute, "step": 3 * forward + recompute}


def settings(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    out = {
        "demo (auto precision), prompts shared": {},
        "demo (auto precision), unshared": {"share_prompts": False},
    }
    if args.fp32:
        out["fp32 (as on AVX2), prompts shared"] = {"mixed_precision": "no"}
        out["fp32 (as on AVX2), unshared"] = {"mixed_precision": "no", "share_prompts": False}
    if args.kl:
        out["demo + KL term (reference passes)"] = {
            "algorithm_args": {"kl_loss": "low_var_kl", "kl_loss_coef": 0.001}
        }
    return out


# ---- report -----------------------------------------------------------------------------


def _row(name: str, seconds: float, total: float, flops: float | None, peak: float) -> str:
    if flops:
        rate = flops / seconds / 1e9 if seconds > 0 else float("nan")
        extra = f"{flops / 1e9:9.1f} {rate:8.1f} {100 * rate / peak:6.0f}%"
    else:
        extra = f"{'':>9} {'':>8} {'':>7}"
    return f"  {name:<52}{seconds:8.2f} {100 * seconds / total:5.0f}% {extra}"


def print_train(name: str, runs: list[dict], flops: dict[str, float], peak: float) -> None:
    med = {k: statistics.median(r["seconds"].get(k, 0.0) for r in runs) for k in runs[0]["seconds"]}
    total = med["step"]
    fwd, whole, recompute = flops["forward"], flops["step"], flops["recompute"]
    m = runs[0]["metrics"]
    print(
        f"\n{name}: {total:.2f} s/step (median of {len(runs)}), {whole / 1e9:.0f} GFLOP, "
        f"{whole / total / 1e9:.1f} GFLOP/s = {100 * whole / total / 1e9 / peak:.0f}% of the "
        f"matmul peak; shared rows {m.get('train/prompt_sharing/shared_rows', 0):.2f}, "
        f"padded tokens x{m.get('train/prompt_sharing/token_ratio', 1):.2f}"
    )
    print(f"  {'phase':<52}{'s':>8} {'share':>6} {'GFLOP':>9} {'GFLOP/s':>8} {'of peak':>7}")
    order = [
        ("preparation (advantages, order, collate, layout)", None),
        ("  of which reference passes", None),
        ("forward passes (policy)", fwd),
        ("  of which decoder layers (attention + MLP)", None),
        ("  of which logits (vocabulary projection)", None),
        ("backward", whole - fwd),
        ("  of which decoder recompute (checkpointing)", recompute or None),
        ("  of which logits recompute (checkpointed chunks)", None),
        ("optimizer (clip + AdamW)", None),
        ("housekeeping (free memory)", None),
    ]
    alias = {
        "  of which decoder layers (attention + MLP)": "decoder",
        "  of which logits (vocabulary projection)": "logits",
        "  of which decoder recompute (checkpointing)": "decoder recompute",
        "  of which logits recompute (checkpointed chunks)": "logits recompute",
    }
    shown = 0.0
    for label, f in order:
        value = med.get(alias.get(label, label), 0.0)
        if not label.startswith("  "):
            shown += value
        print(_row(label, value, total, f, peak))
    print(_row("rest (loss, metrics, Python)", total - shown, total, None, peak))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--fp32", action="store_true", help="also the fp32 settings")
    parser.add_argument("--kl", action="store_true", help="also the demo with a KL term")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    parser.add_argument("--model", default="smollm2-135m-instruct", help="catalog name")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from transformers import AutoTokenizer

    from reinforge.models.catalog import resolve_model_path

    cpu = cpu_kind.capability()
    print(cpu_kind.describe(cpu))
    print(f"load average before: {os.getloadavg()}; torch threads {args.threads}")
    model_path = resolve_model_path(args.model)
    # "of peak" divides by the best of these: under an AVX2 cap the demo's training step
    # ran at twice the 1152-row matmul's rate, so the micro-batch's own shape (~4k rows)
    # and the decode's (64 rows) are measured too
    peaks = {
        "fp32 1152x576x1536": matmul_gflops(torch.float32, 1152, 576, 1536),
        "bf16 1152x576x1536": matmul_gflops(torch.bfloat16, 1152, 576, 1536),
        "fp32 4096x576x1536 (micro-batch)": matmul_gflops(torch.float32, 4096, 576, 1536),
        "bf16 4096x576x1536 (micro-batch)": matmul_gflops(torch.bfloat16, 4096, 576, 1536),
        "fp32 64x576x1536 (decode)": matmul_gflops(torch.float32, 64, 576, 1536),
        "bf16 64x576x1536 (decode)": matmul_gflops(torch.bfloat16, 64, 576, 1536),
        "fp32 256x576x49152 (head)": matmul_gflops(torch.float32, 256, 576, 49152),
        "bf16 256x576x49152 (head)": matmul_gflops(torch.bfloat16, 256, 576, 49152),
    }
    print(
        "matmul GFLOP/s on this machine now: " + ", ".join(f"{k} {v:.1f}" for k, v in peaks.items())
    )
    engine_dtype = {"bf16": "bfloat16", "fp32": "float32"}[cpu["auto_precision"]]
    exps, explore = explore_step(model_path, "auto", args.prompts, args.group)
    peak = max(v for k, v in peaks.items() if k.startswith(cpu["auto_precision"]))
    wall = explore["wall"]
    print(
        f"\nexploring step ({engine_dtype} engine, {len(exps)} rollouts, "
        f"{explore['generated']} tokens generated, {explore['prompt_tokens']} prompt tokens "
        f"prefilled, train accuracy {explore['accuracy']:.2f}): {wall:.2f} s sampling, "
        f"~{explore['flops'] / 1e9:.0f} GFLOP = {explore['flops'] / wall / 1e9:.1f} GFLOP/s, "
        f"{100 * explore['flops'] / wall / 1e9 / peak:.0f}% of the matmul peak"
    )
    seconds = dict(explore["seconds"])
    scoring = seconds.pop("reward (math-verify)", 0.0)
    for name, value in sorted(seconds.items(), key=lambda kv: kv[0].startswith("  ")):
        print(f"  {name:<52}{value:8.2f} {100 * value / wall:5.0f}%")
    top = sum(v for k, v in seconds.items() if not k.startswith("  "))
    print(
        f"  {'rest (request handling, batching, Python)':<52}{wall - top:8.2f} "
        f"{100 * (wall - top) / wall:5.0f}%"
    )
    print(f"  then the reward (math-verify, {len(exps)} replies): {scoring:.2f} s")
    pad = AutoTokenizer.from_pretrained(model_path, local_files_only=True).pad_token_id
    chosen = settings(args)
    runs: dict[str, list[dict]] = {name: [] for name in chosen}
    loads: list[float] = []
    for _ in range(args.rounds):
        for name, changes in chosen.items():
            runs[name].append(train_step(model_path, changes, exps, pad))
            loads.append(os.getloadavg()[0])
            took = runs[name][-1]["seconds"]["step"]
            print(f"  [{name}: {took:.2f} s, load {loads[-1]:.1f}]", file=sys.stderr, flush=True)
    flops = {name: step_flops(model_path, changes, exps, pad) for name, changes in chosen.items()}
    tokens = sum(len(e.tokens) for e in exps)
    print(
        f"\ntraining step: {len(exps)} rows, {tokens} tokens, trainer section of {DEMO.name}; "
        f"1-min load while timing: {min(loads):.1f}-{max(loads):.1f}"
    )
    for name in chosen:
        fp32_peak = max(v for k, v in peaks.items() if k.startswith("fp32"))
        precision_peak = fp32_peak if "fp32" in name else peak
        print_train(name, runs[name], flops[name], precision_peak)
    steps = {n: statistics.median(r["seconds"]["step"] for r in rs) for n, rs in runs.items()}
    names = list(chosen)
    for shared, plain in zip(names[::2], names[1::2], strict=False):
        if "unshared" in plain:
            print(f"\nprompt sharing: {plain} / {shared} = {steps[plain] / steps[shared]:.2f}x")
    print(f"\n{cpu_kind.describe(cpu)}; load average at the end: {os.getloadavg()}")
    if args.out:
        args.out.write_text(
            json.dumps(
                {"cpu": cpu, "peaks": peaks, "explore": explore, "train": runs, "flops": flops},
                indent=2,
                default=str,
            )
        )


if __name__ == "__main__":
    main()
