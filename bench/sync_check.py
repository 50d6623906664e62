"""The weight check after a sync: its cost beside the sync's, and a real run it stops.

``cost`` (default): loads SmolLM2-135M-Instruct into a trainer and an engine (the
demo's ``hf`` engine, or ``--engine vllm`` replicas from .venv-vllm), then times, round
by round so machine load drifts over both alike, a sync alone and a sync followed by
the check (``sync_in_process`` with and without a ``WeightCheck``). Printed: the
median sync time, the median time the check added (the sync+check wall time minus the
sync's), the check's own ``sync/verify_time``, and the issue's target (at most 10% of
the sync, or 50 ms, whichever is larger).

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
from typing import Any

import torch


def _engine(kind: str, path: Any, dtype: str) -> Any:
    if kind == "hf":
        from reinforge.models.engines.hf import HFEngine

        return HFEngine(path, device="cpu", dtype=dtype, num_threads=1)
    from reinforge.models.engines.vllm import VLLMEngine

    return VLLMEngine(path, python=".venv-vllm/bin/python", kv_cache_gb=1, max_model_len=512)


def cost(args: argparse.Namespace) -> None:
    from reinforge.models.catalog import resolve_model_path
    from reinforge.trainer.sync_check import WeightCheck
    from reinforge.trainer.trainer import Trainer
    from reinforge.trainer.trainer_config import TrainerConfig
    from reinforge.trainer.weight_sync import sync_in_process

    torch.set_num_threads(1)
    path = resolve_model_path(args.model)
    engine = _engine(args.engine, path, args.dtype)
    trainer = Trainer(path, TrainerConfig.model_validate({"lr": 1e-6}), pad_token_id=0)
    syncs, totals, verifies = [], [], []
    try:
        for _ in range(args.rounds):
            started = time.perf_counter()
            sync_in_process(trainer, engine)
            syncs.append(time.perf_counter() - started)
            check = WeightCheck()
            started = time.perf_counter()
            sync_in_process(trainer, engine, check)
            totals.append(time.perf_counter() - started)
            verifies.append(check.last_seconds)
    finally:
        engine.close()
    sync, total = statistics.median(syncs), statistics.median(totals)
    added = total - sync
    target = max(0.1 * sync, 0.05)
    print(f"engine {args.engine} ({args.dtype}), {args.model}, {args.rounds} rounds")
    print(f"sync:                     {sync * 1000:8.1f} ms (median)")
    print(f"sync + check:             {total * 1000:8.1f} ms (median)")
    print(
        f"added by the check:       {added * 1000:8.1f} ms ({100 * added / sync:.0f}% of the sync)"
    )
    print(f"sync/verify_time:         {statistics.median(verifies) * 1000:8.1f} ms (median)")
    print(f"target: <= {target * 1000:.0f} ms -> {'met' if added <= target else 'NOT met'}")


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
