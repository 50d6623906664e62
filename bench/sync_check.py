"""The weight check after a sync: its cost beside the sync's, and a real run it stops.

``cost`` (default): loads SmolLM2-135M-Instruct into a trainer and an engine (the
demo's ``hf`` engine, or ``--engine vllm`` replicas from .venv-vllm), then times, round
by round so machine load drifts over all alike, a sync three ways: without the check;
with the check decided at once (the sync waits for every replica's probe: how runs did
it before); deferred (how runs do it now: the probe's two forward passes run behind the
sync, and the next train step waits for the verdict, ``WeightCheck.settle``, timed
here right after the sync, so it is the worst case: nothing ran in between). Printed:
the median sync time, what each way adds to it, the deferred verdict's wait, and the
check's CPU time (what it still costs the machine, wherever it runs), beside the
issue's target (at most 10% of the sync, or 50 ms, whichever is larger).

``broken-run``: runs ``reinforge run`` with the weight sync broken on purpose
(``--break stale``: the last vLLM replica skips the reload and keeps the previous
weights; ``skip-tensor``: one tensor never reaches the engine; ``dtype``: the weights
are written in float16 for float32 servers), so the message a user sees is on record.

Run::

    .venv/bin/python bench/sync_check.py cost                      # hf, ~1 min on 2 cores
    .venv/bin/python bench/sync_check.py cost --engine vllm        # + a vLLM start
    .venv/bin/python bench/sync_check.py broken-run --break stale -- \\
        -c examples/vllm/grpo.yaml --set buffer.total_steps=1 --set explorer.eval_on_start=false
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from functools import partial
from typing import Any

import torch


def _engine(kind: str, path: Any, dtype: str, threads: int) -> Any:
    if kind == "hf":
        from reinforge.models.engines.hf import HFEngine

        return HFEngine(path, device="cpu", dtype=dtype, num_threads=threads)
    from reinforge.models.engines.vllm import VLLMEngine

    return VLLMEngine(path, python=".venv-vllm/bin/python", kv_cache_gb=1, max_model_len=512)


def _timed(fn: Any) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process: every thread) of ``fn()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def cost(args: argparse.Namespace) -> None:
    from reinforge.models.catalog import resolve_model_path
    from reinforge.trainer.sync_check import WeightCheck
    from reinforge.trainer.trainer import Trainer
    from reinforge.trainer.trainer_config import TrainerConfig
    from reinforge.trainer.weight_sync import sync_in_process

    torch.set_num_threads(args.threads)
    path = resolve_model_path(args.model)
    engine = _engine(args.engine, path, args.dtype, args.threads)
    trainer = Trainer(path, TrainerConfig.model_validate({"lr": 1e-6}), pad_token_id=0)
    rows: dict[str, list[float]] = {}

    def add(name: str, timed: tuple[float, float]) -> None:
        rows.setdefault(f"{name} wall", []).append(timed[0])
        rows.setdefault(f"{name} cpu", []).append(timed[1])

    gaps = []
    try:
        for _ in range(args.rounds):
            add("sync", _timed(lambda: sync_in_process(trainer, engine)))
            add("at once", _timed(lambda: sync_in_process(trainer, engine, WeightCheck())))
            check = WeightCheck(deferred=True)
            add("deferred", _timed(partial(sync_in_process, trainer, engine, check)))
            add("verdict", _timed(check.settle))
            gaps.append(max(check.last_gaps.values()))
    finally:
        engine.close()
    med = {k: statistics.median(v) for k, v in rows.items()}
    sync = med["sync wall"]
    target = max(0.1 * sync, 0.05)

    def line(label: str, seconds: float) -> None:
        print(f"{label:52s} {seconds * 1000:8.1f} ms ({100 * seconds / sync:.0f}% of the sync)")

    print(f"engine {args.engine} ({args.dtype}, {args.threads} thread(s)), {args.model}, ", end="")
    print(f"{args.rounds} rounds, medians")
    print(f"{'sync (wall)':52s} {sync * 1000:8.1f} ms")
    line("added to the sync, check decided at once (before)", med["at once wall"] - sync)
    deferred = med["deferred wall"] - sync
    line("added to the sync, check deferred (now)", deferred)
    line("the deferred check's wait at the next train step", med["verdict wall"])
    cpu = med["deferred cpu"] + med["verdict cpu"] - med["sync cpu"]
    line("CPU time of the check (both forwards, all threads)", cpu)
    print(f"largest gap of a replica: {max(gaps):.3g}")
    print(f"target: <= {target * 1000:.0f} ms added to the sync -> ", end="")
    print("met" if deferred <= target else "NOT met")


def _break(how: str) -> None:
    """Patch the vLLM engine's sync so it fails the way ``how`` says, silently."""
    from reinforge.models.engines.vllm import engine as vllm_engine

    if how == "stale":
        real_call = vllm_engine.VLLMEngine._call

        def call(self: Any, server: Any, method: str, path: str, *, stage: str, **kw: Any) -> Any:
            if server is self.servers[-1] and stage == "reload weights":
                return None  # the last replica keeps serving the previous weights
            return real_call(self, server, method, path, stage=stage, **kw)

        vllm_engine.VLLMEngine._call = call  # type: ignore[method-assign]
    elif how == "skip-tensor":
        real_update = vllm_engine.VLLMEngine.update_weights

        def update(self: Any, state_dict: dict, version: int | None = None) -> None:
            name = "model.layers.3.mlp.down_proj.weight"
            real_update(self, {k: v for k, v in state_dict.items() if k != name}, version)

        vllm_engine.VLLMEngine.update_weights = update  # type: ignore[method-assign]
    elif how == "dtype":
        real_write = vllm_engine.write_full_weights

        def write(state: Any, base: Any, folder: Any, dtype: str | None = None) -> Any:
            return real_write(state, base, folder, dtype="float16")

        vllm_engine.write_full_weights = write


def broken_run(args: argparse.Namespace, rest: list[str]) -> None:
    from reinforge.cli.main import app

    _break(args.how)
    print(f"[bench] the weight sync is broken on purpose: {args.how}", file=sys.stderr)
    app(["run", *rest])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    c = sub.add_parser("cost")
    c.add_argument("--engine", choices=["hf", "vllm"], default="hf")
    c.add_argument("--dtype", default="float32")
    c.add_argument("--model", default="smollm2-135m-instruct")
    c.add_argument("--rounds", type=int, default=5)
    c.add_argument("--threads", type=int, default=1, help="torch threads (engine and trainer)")
    b = sub.add_parser("broken-run")
    b.add_argument(
        "--break", dest="how", choices=["stale", "skip-tensor", "dtype"], default="stale"
    )
    argv = sys.argv[1:] or ["cost"]
    rest: list[str] = []
    if "--" in argv:
        argv, rest = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    args = parser.parse_args(argv)
    if args.command == "broken-run":
        broken_run(args, rest)
    else:
        cost(args)


if __name__ == "__main__":
    main()
