"""Framework overhead of the explorer: tasks → workflows → SQLite buffer with the mock engine.

Why: with a real model the explorer's own bookkeeping (task messages, worker
threads, Experience construction, serialisation, SQLite writes) must stay far below
the cost of generation, so that it never becomes the bottleneck when the engine is
fast (a remote server, a small model, many runners). The mock engine answers
instantly, so what this script measures is almost entirely that bookkeeping.

It runs the real path: ``Explorer`` with a ``SQLiteExperienceStorage`` in a temp
dir, a generated jsonl taskset of arithmetic rows, ``math_boxed_workflow`` with
``repeat_times`` 1 and a deliberately cheap reward function registered here (so
the reward does not dominate). If the built-in ``math_boxed_reward`` is registered
at run time, one more measurement with it is printed, labelled as such.

Per phase (summed over all steps of one explore run):

* load: reading the jsonl taskset into Tasks (``Explorer._load``)
* requests: building TaskRequests (``make_requests``; the Task itself travels)
* schedule+workflow: ``Scheduler.run`` (requests → runners → workflows → results)
* sqlite write: ``storage.write`` (experiences) + ``storage.write_task_results``
* other: the rest of the explore loop (step metrics, thread hand-offs) and garbage
  collection passes, which land wherever the allocation that triggers them happens

Target: >= 8,000 experiences/s on 2 cores (issue 11). Run::

    .venv/bin/python bench/explorer_overhead.py --tasks 10000 --repeats 5
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import reinforge.explorer.explorer as explorer_module
import reinforge.workflows  # noqa: F401
from reinforge.buffer import SQLiteExperienceStorage
from reinforge.buffer.buffer_config import BufferConfig, ExplorerInput
from reinforge.buffer.taskset_config import FormatSection, TasksetConfig
from reinforge.explorer import Explorer
from reinforge.explorer.explorer_config import ExplorerConfig
from reinforge.models.engines.mock import MockEngine
from reinforge.rewards import REWARD_FUNCTIONS, RewardFn

CHEAP_REWARD = "bench_cheap_boxed_reward"
_BOXED = re.compile(r"\\boxed\{([^}]*)\}")

if CHEAP_REWARD not in REWARD_FUNCTIONS:

    @REWARD_FUNCTIONS.register_module(CHEAP_REWARD)
    class CheapBoxedReward(RewardFn):
        """Exact string match of the last ``\\boxed{}``: microseconds, unlike math-verify."""

        def __call__(
            self, response: str, truth: str | None = None, prompt: str | None = None, **kw: Any
        ) -> dict[str, float]:
            found = _BOXED.findall(response)
            return {"accuracy": float(bool(found) and found[-1].strip() == truth)}


def write_taskset(path: Path, n: int, seed: int = 0) -> None:
    """``n`` rows like the arithmetic example: ``{"question": "What is a op b?", "answer": ...}``."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as fh:
        for _ in range(n):
            a, b = rng.randint(0, 999), rng.randint(0, 999)
            op = rng.choice("+-*")
            value = a + b if op == "+" else a - b if op == "-" else a * b
            fh.write(json.dumps({"question": f"What is {a} {op} {b}?", "answer": str(value)}))
            fh.write("\n")


class PhaseTimer:
    """Accumulates wall time of wrapped callables under phase names."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}

    def wrap_sync(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.totals[name] = self.totals.get(name, 0.0) + time.perf_counter() - start

        return timed

    def wrap_async(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        async def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                self.totals[name] = self.totals.get(name, 0.0) + time.perf_counter() - start

        return timed


def run_once(
    taskset_path: Path,
    *,
    reward: str,
    concurrency: int,
    batch_size: int,
    workdir: Path,
    workflow: str = "math_boxed_workflow",
) -> tuple[int, float, dict[str, float]]:
    """One full explore over the taskset in a fresh buffer; (experiences, seconds, phases)."""
    taskset = TasksetConfig(
        name="bench-arith",
        path=str(taskset_path),
        format=FormatSection(prompt_key="question", response_key="answer"),
        repeat_times=1,
        default_workflow_type=workflow,
        default_reward_fn_type=reward,
    )
    buffer = BufferConfig(
        batch_size=batch_size, total_epochs=1, explorer_input=ExplorerInput(taskset=taskset)
    )
    db = Path(tempfile.mkdtemp(dir=workdir)) / "buffer.db"
    explorer = Explorer(
        MockEngine(policy="arithmetic", error_rate=0.25),
        buffer=buffer,
        explorer=ExplorerConfig(runner_concurrency=concurrency),
        storage=SQLiteExperienceStorage(db),
    )
    timer = PhaseTimer()
    explorer._load = timer.wrap_sync("load", explorer._load)  # type: ignore[method-assign]
    explorer.scheduler.run = timer.wrap_async(  # type: ignore[method-assign]
        "schedule+workflow", explorer.scheduler.run
    )
    explorer.storage.write = timer.wrap_sync(  # type: ignore[method-assign]
        "sqlite write", explorer.storage.write
    )
    explorer.storage.write_task_results = timer.wrap_sync(  # type: ignore[method-assign]
        "sqlite write", explorer.storage.write_task_results
    )
    make_requests = explorer_module.make_requests
    explorer_module.make_requests = timer.wrap_sync("requests", make_requests)
    # Each run starts from the same heap: the previous run's leftovers (cyclic garbage
    # such as a wrapper's turn index) are collected here, not in the timed run's first
    # full collection; the run's own collections still count.
    gc.collect()
    try:
        start = time.perf_counter()
        summary = asyncio.run(explorer.explore())
        elapsed = time.perf_counter() - start
        stored = explorer.storage.count()
    finally:
        explorer_module.make_requests = make_requests
        # the timing wrappers are instance attributes holding bound methods of their
        # owners: remove them, or every object of this run stays alive in a cycle
        # until a later run's full collection has to walk it
        del explorer._load, explorer.scheduler.run
        del explorer.storage.write, explorer.storage.write_task_results
        explorer.close()
    if stored != summary.experiences or summary.status_counts.get("ok") != summary.tasks:
        raise RuntimeError(f"bench run lost work: {summary.status_counts}, stored={stored}")
    timer.totals["other"] = elapsed - sum(timer.totals.values())
    return summary.experiences, elapsed, timer.totals


def measure(
    label: str, taskset_path: Path, *, reward: str, repeats: int, concurrency: int, **kw: Any
) -> None:
    rates: list[float] = []
    phases: list[dict[str, float]] = []
    n_exp = 0
    for _ in range(repeats):
        n_exp, elapsed, totals = run_once(
            taskset_path, reward=reward, concurrency=concurrency, **kw
        )
        rates.append(n_exp / elapsed)
        phases.append(totals)
    median_rate = statistics.median(rates)  # a single middle run when repeats is odd
    print(f"\n== {label} (reward fn: {reward}) ==")
    print(
        f"experiences/s: median {median_rate:,.0f} over {repeats} runs of {n_exp} experiences "
        f"(min {min(rates):,.0f}, max {max(rates):,.0f})"
    )
    # the phases of the median run, so that they add up to its wall time
    median_run = sorted(range(repeats), key=rates.__getitem__)[repeats // 2]
    totals = phases[median_run]
    wall = sum(totals.values())
    print(f"phases of the median run ({wall:.3f} s):")
    print(f"{'phase':<18} {'s':>7}   {'per exp (us)':>12}   {'share':>6}")
    for name in ["load", "requests", "schedule+workflow", "sqlite write", "other"]:
        value = totals.get(name, 0.0)
        print(f"{name:<18} {value:7.3f}   {value / n_exp * 1e6:12.1f}   {value / wall:6.1%}")


def main() -> None:
    # As the `reinforge` command does: start-up objects (torch, transformers) move to
    # the permanent generation, so full collections do not rescan them.
    gc.freeze()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16, help="runner_concurrency")
    parser.add_argument("--batch-size", type=int, default=256, help="tasks per explore step")
    parser.add_argument(
        "--workflow",
        default="math_boxed_workflow",
        help="e.g. simple_workflow, async_math_boxed_workflow",
    )
    parser.add_argument(
        "--no-builtin-reward",
        action="store_true",
        help="skip the extra measurement with the built-in math_boxed_reward",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="reinforge-bench-") as tmp:
        workdir = Path(tmp)
        taskset_path = workdir / "train.jsonl"
        write_taskset(taskset_path, args.tasks)
        common: dict[str, Any] = dict(
            concurrency=args.concurrency,
            batch_size=args.batch_size,
            workdir=workdir,
            workflow=args.workflow,
        )
        run_once(taskset_path, reward=CHEAP_REWARD, **common)  # warm-up: imports, caches
        print(
            f"{args.tasks} tasks, {args.workflow}, repeat_times 1, mock engine, "
            f"runner_concurrency {args.concurrency}, batch_size {args.batch_size}"
        )
        measure(
            "cheap reward (framework overhead)",
            taskset_path,
            reward=CHEAP_REWARD,
            repeats=args.repeats,
            **common,
        )
        if args.no_builtin_reward:
            pass
        elif "math_boxed_reward" in REWARD_FUNCTIONS:
            measure(
                "built-in math_boxed_reward (math-verify; not framework overhead)",
                taskset_path,
                reward="math_boxed_reward",
                repeats=args.repeats,
                **common,
            )
        else:
            print("\n(built-in math_boxed_reward is not registered: skipped)")
        print("\ntarget: >= 8,000 experiences/s with the cheap reward")


if __name__ == "__main__":
    main()
