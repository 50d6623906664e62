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

``calibrate``: the honest gap and each break's gap for one engine and dtype, so a
tolerance can sit between them (``TOLERANCES``; docs/verification.md). For each
``--lr``, a fresh fp32 trainer (GRPO on the engine's own samples of 2 chats x 4) is
synced into the engine (135M; the files path on vLLM) after each of ``--syncs`` steps:
the honest gaps. Then the breaks, each followed by a correct sync: the engine left
``k`` steps behind (its reload skipped: a replica kept on older weights; ``--stale``),
one tensor skipped (``--skip``; vLLM completes it from the base model, ``hf`` keeps its
last value), the weights sent in float16. Printed per sync: the largest and the mean
per-token gap on the probe, whether the tolerance in force catches it, and what the
weights' rounding to the engine's dtype alone moves (the trainer against its own
rounded weights) beside the engine's gap to those rounded weights. ``--dump`` writes
every sync's per-token log-probs.

``broken-run``: runs ``reinforge run`` with the weight sync broken on purpose
(``--break stale``: the last vLLM replica skips the reload and keeps the previous
weights; ``skip-tensor``: one tensor never reaches the engine; ``dtype``: the weights
are written in float16 for float32 servers), so the message a user sees is on record.

Run::

    .venv/bin/python bench/sync_check.py cost                      # hf, ~1 min on 2 cores
    .venv/bin/python bench/sync_check.py cost --engine vllm        # + a vLLM start
    .venv/bin/python bench/sync_check.py calibrate --engine vllm --dtype bfloat16 \\
        --lr 1e-5 1e-4 1e-3 --syncs 8 --stale 1 4                # ~5 min
    .venv/bin/python bench/sync_check.py broken-run --break stale -- \\
        -c examples/vllm/grpo.yaml --set buffer.total_steps=1 --set explorer.eval_on_start=false
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import torch


def _engine(kind: str, path: Any, dtype: str, threads: int) -> Any:
    if kind == "hf":
        from reinforge.models.engines.hf import HFEngine

        return HFEngine(path, device="cpu", dtype=dtype, num_threads=threads)
    from reinforge.models.engines.vllm import VLLMEngine

    return VLLMEngine(
        path, python=".venv-vllm/bin/python", kv_cache_gb=1, max_model_len=512, dtype=dtype
    )


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


#: chats the engine samples for the calibration's GRPO steps (rewards alternate, so
#: every group has a spread and each step moves every tensor)
CHATS = [
    [{"role": "user", "content": "What is 7 * 8? Answer with just the number."}],
    [{"role": "user", "content": "Name a colour."}],
]


#: per sync, the trainer's and each replica's log-probs on the probe (``--dump``)
DUMP: list[dict[str, Any]] = []


def _rounded_logprobs(trainer: Any, ids: list[int], start: int, dtype: str) -> list[float]:
    """The trainer's probe log-probs (fp32 compute) on its weights rounded to ``dtype``:
    the weights an engine computing in ``dtype`` is sent."""
    from types import SimpleNamespace

    from reinforge.trainer.sync_check import trainer_logprobs

    model = copy.deepcopy(trainer.model)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(getattr(torch, dtype)).float())
    return trainer_logprobs(SimpleNamespace(model=model), ids, start)


def _gaps(trainer: Any, engine: Any, dtype: str) -> tuple[float, float, float, float]:
    """(largest, mean) per-token gap on the probe, worst replica (what the check sees);
    then the largest gap between the trainer and its own weights rounded to ``dtype``
    (what rounding alone moves), and between the engine and those rounded weights."""
    from reinforge.trainer.sync_check import probe_ids, trainer_logprobs

    ids, start = probe_ids(engine.tokenizer)
    expected = trainer_logprobs(trainer, ids, start)
    rounded = _rounded_logprobs(trainer, ids, start, dtype)
    worst = (0.0, 0.0)
    to_rounded = 0.0
    served_all = engine.score_replicas(ids)
    for _, served in served_all:
        gaps = [abs(a - b) for a, b in zip(served[start - 1 :], expected, strict=True)]
        worst = max(worst, (max(gaps), sum(gaps) / len(gaps)))
        pairs = zip(served[start - 1 :], rounded, strict=True)
        to_rounded = max(to_rounded, *(abs(a - b) for a, b in pairs))
    rounding = max(abs(a - b) for a, b in zip(expected, rounded, strict=True))
    DUMP.append(
        {"ids": ids[start:], "trainer": expected, "rounded": rounded,
         "engine": [s[start - 1 :] for _, s in served_all]}
    )  # fmt: skip
    return (*worst, rounding, to_rounded)


def _calibrate_at(engine: Any, path: Any, lr: float, first: int, args: argparse.Namespace) -> list:
    """The honest syncs and the breaks with a fresh fp32 trainer at ``lr``, its versions
    counted from ``first``; rows (lr, what, version, steps behind, largest, mean)."""
    from reinforge.core import EID
    from reinforge.models import ModelWrapper
    from reinforge.trainer.trainer import Trainer
    from reinforge.trainer.trainer_config import TrainerConfig
    from reinforge.trainer.weight_sync import WeightTransport, sync_in_process

    whole = WeightTransport("whole")  # the files path on vLLM: a skipped tensor is the base's
    rows: list[tuple[Any, ...]] = []
    pad = engine.tokenizer.pad_token_id or 0
    trainer = Trainer(path, TrainerConfig.model_validate({"lr": lr}), pad_token_id=pad)
    trainer.model_version = first
    wrapper = ModelWrapper(engine)
    exps = [e for c in CHATS for e in wrapper.chat(c, n=4, max_tokens=16, temperature=1.0)]
    for i, exp in enumerate(exps):
        exp.eid = EID(batch=1, task=i // 4, run=i % 4)
        exp.reward = float(i % 2)

    def step() -> None:
        assert not trainer.train_step(exps).skipped

    def sync(what: str, behind: int = 0) -> None:
        began = time.perf_counter()
        sync_in_process(trainer, engine, None, whole)
        gaps = _gaps(trainer, engine, args.dtype)
        rows.append((lr, what, trainer.model_version, behind, *gaps))
        print(f"[bench] lr {lr:g} {what}: {rows[-1][4]:.4g} ({time.perf_counter() - began:.1f} s)")

    sync("base weights")
    for _ in range(args.syncs):
        step()
        sync("correct sync")
    for k in args.stale:  # the engine keeps the weights of the last correct sync
        for _ in range(k):
            step()
        engine.update_weights = lambda sd, version=None: setattr(  # type: ignore[method-assign]
            engine, "_model_version", int(version or 0)
        )
        sync(f"reload skipped, {k} step(s) behind", k)
        del engine.update_weights
        sync("correct sync")
    real_weights = type(trainer).weights_for_sync
    for name in args.skip:
        step()
        trainer.weights_for_sync = lambda name=name: {  # type: ignore[method-assign]
            k: v for k, v in real_weights(trainer).items() if k != name
        }
        sync(f"{name} skipped", trainer.model_version - first)
        del trainer.weights_for_sync
        sync("correct sync")
    step()
    trainer.weights_for_sync = lambda: {  # type: ignore[method-assign]
        k: v.to(torch.float16) if v.is_floating_point() else v
        for k, v in real_weights(trainer).items()
    }
    sync("weights sent in float16")
    del trainer.weights_for_sync
    sync("correct sync")
    return rows


def calibrate(args: argparse.Namespace) -> None:
    from reinforge.models.catalog import resolve_model_path
    from reinforge.trainer.sync_check import TOLERANCES

    torch.set_num_threads(args.threads)
    path = resolve_model_path(args.model)
    engine = _engine(args.engine, path, args.dtype, args.threads)
    rows: list[tuple[Any, ...]] = []
    try:
        for lr in args.lr:
            rows += _calibrate_at(engine, path, lr, rows[-1][2] + 1 if rows else 0, args)
    finally:
        engine.close()
    if args.dump:
        for row, probe in zip(rows, DUMP, strict=True):
            probe["row"] = list(row)
        Path(args.dump).write_text(json.dumps(DUMP))
    tolerance = TOLERANCES[(args.engine, args.dtype)]
    print(f"\nengine {args.engine} ({args.dtype}), trainer fp32, {args.model}")
    print("(rounding: the trainer against its own weights rounded to the engine's dtype;")
    print(" to rounded: the engine against those rounded weights)")
    print(
        "| lr | sync | version | steps behind | largest gap | mean gap | caught | rounding |",
        end="",
    )
    print(" to rounded |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for lr, what, version, behind, worst, mean, rounding, to_rounded in rows:
        caught = "yes" if worst > tolerance else "no"
        print(
            f"| {lr:g} | {what} | {version} | {behind} | {worst:.3g} | {mean:.3g} | {caught} ",
            end="",
        )
        print(f"| {rounding:.3g} | {to_rounded:.3g} |")
    honest = [r[4] for r in rows if r[1] in ("correct sync", "base weights")]
    print(f"honest largest gaps over {len(honest)} syncs: min {min(honest):.3g}, median ", end="")
    print(f"{statistics.median(honest):.3g}, max {max(honest):.3g}; tolerance now {tolerance:g}")


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
    k = sub.add_parser("calibrate")
    k.add_argument("--engine", choices=["hf", "vllm"], default="vllm")
    k.add_argument("--dtype", default="bfloat16")
    k.add_argument("--model", default="smollm2-135m-instruct")
    k.add_argument("--lr", type=float, nargs="+", default=[1e-5], help="1e-5: the demo's")
    k.add_argument("--syncs", type=int, default=3, help="correct syncs of changed weights, a lr")
    k.add_argument("--stale", type=int, nargs="*", default=[1, 4], help="steps behind")
    k.add_argument(
        "--skip",
        nargs="*",
        default=["model.embed_tokens.weight", "model.layers.3.mlp.down_proj.weight"],
    )
    k.add_argument("--threads", type=int, default=1)
    k.add_argument("--dump", help="JSON file: each sync's per-token log-probs, both sides")
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
    elif args.command == "calibrate":
        calibrate(args)
    else:
        cost(args)


if __name__ == "__main__":
    main()
