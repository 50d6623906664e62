"""Do two policies differ on held-out tasks? Every given policy plays the same tasks, and
the scores are compared task by task.

    .venv/bin/python bench/paired_eval.py --env frozen_lake --maps 512 --skip 1088 \
        --games 2 warm=runs/al/seed1/sft gigpo=runs/al/seed1/gigpo [--out DIR]

Each ``NAME=WEIGHTS`` (a run folder, whose newest checkpoint is used, or a checkpoint
folder; the first one is the reference) is evaluated with ``reinforge eval`` on the
example RL config's eval taskset: its own tasks, or with ``--maps N`` (FrozenLake) N
maps that no shipped row has, after the first ``--skip`` such maps (those
``bench/agent_learning.py``'s ``--eval-maps`` and ``--train-maps`` used), ``--games``
games each. The eval records every task's mean score (``task_results.score``). A
policy evaluated by an earlier call with the same ``--out`` and the same settings is
not evaluated again, so policies can be added one call at a time.

It prints each policy's mean score with a 95% t-interval over tasks, and each policy
minus the reference, paired by task, with its interval and how many tasks it won more
and fewer games of: with a policy that plays most maps the same way every time the
eval's noise is mostly which maps were drawn, and pairing by map removes it. One
training seed is still one draw of the training: this measures the eval's noise, not
the training's. Writes ``paired.json`` into ``--out``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import seed_stats  # noqa: E402  (bench/seed_stats.py, beside this script)
from agent_learning import (  # noqa: E402  (bench/agent_learning.py)
    ENVS,
    eval_overrides,
    eval_taskset,
    new_frozen_lake_maps,
    reinforge_run,
)


def task_scores(run_dir: Path, taskset: str) -> dict[str, float]:
    """Mean score per task of the eval stored in ``run_dir``'s buffer (every record of
    the taskset's eval; a task that failed counts as 0, as the eval's metrics do)."""
    from reinforge.buffer import SQLiteExperienceStorage

    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        records = [r for r in storage.task_results() if r.taskset == taskset and r.batch]
    finally:
        storage.close()
    per_task: dict[str, list[float]] = {}
    for record in records:
        per_task.setdefault(record.task, []).append(record.score or 0.0)
    if not per_task:
        raise SystemExit(f"{run_dir}: no eval records of taskset {taskset!r}")
    return {task: sum(v) / len(v) for task, v in per_task.items()}


def compare(scores: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Each policy's mean over tasks, and each later policy minus the first, task by
    task (only tasks both have), each with its 95% t-interval over tasks."""
    names = list(scores)
    reference = scores[names[0]]
    result: dict[str, Any] = {"policies": {}, "differences": {}}
    for name in names:
        values = list(scores[name].values())
        result["policies"][name] = {**_row(values), "tasks": len(values)}
    for name in names[1:]:
        common = sorted(set(scores[name]) & set(reference))
        diffs = [scores[name][t] - reference[t] for t in common]
        result["differences"][f"{name} - {names[0]}"] = {
            **_row(diffs),
            "tasks": len(common),
            "better": sum(d > 0 for d in diffs),
            "worse": sum(d < 0 for d in diffs),
        }
    return result


def _row(values: list[float]) -> dict[str, float]:
    iv = seed_stats.interval(values)
    return {"mean": iv.mean, "low": iv.low, "high": iv.high}


def report(result: dict[str, Any]) -> None:
    print("mean score over tasks [95% t-interval over tasks]:")
    for name, row in result["policies"].items():
        print(f"  {name:20} {row['mean']:.3f} [{row['low']:.3f}, {row['high']:.3f}]  "
              f"({row['tasks']} tasks)")  # fmt: skip
    for name, row in result["differences"].items():
        print(f"  {name:20} {row['mean']:+.3f} [{row['low']:+.3f}, {row['high']:+.3f}]  "
              f"paired by task: {row['better']} better, {row['worse']} worse, "
              f"{row['tasks'] - row['better'] - row['worse']} the same")  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("policies", nargs="+", help="NAME=WEIGHTS; the first is the reference")
    parser.add_argument("--env", choices=sorted(ENVS), default="frozen_lake")
    parser.add_argument("--maps", type=int, default=0, help="FrozenLake: this many new maps")
    parser.add_argument("--skip", type=int, default=0, help="new maps to pass over first")
    parser.add_argument("--games", type=int, default=1, help="games (runs) per task")
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--out", type=Path, default=None, help="default: a new temporary folder")
    parser.add_argument("--threads", type=int, default=None, help="torch threads per eval")
    parser.add_argument("--in-process", action="store_true", help="no subprocesses (tests)")
    parser.add_argument("--set", action="append", default=[], dest="extra",
                        help="a --set override for every eval")  # fmt: skip
    args = parser.parse_args(argv)
    if args.maps < 0 or args.skip < 0 or args.games < 1:
        parser.error("--maps and --skip must be >= 0, --games >= 1")
    if args.maps and args.env != "frozen_lake":
        parser.error("--maps makes FrozenLake maps; --env webshop plays its own test goals")
    pairs = [p.partition("=") for p in args.policies]
    if any(not name or not sep or not path for name, sep, path in pairs):
        parser.error("each policy is NAME=WEIGHTS (a run folder or a checkpoint folder)")
    args.named = {name: Path(path) for name, _, path in pairs}
    if len(args.named) != len(pairs):
        parser.error("policy names must differ")
    missing = [str(p) for p in args.named.values() if not p.exists()]
    if missing:
        parser.error(f"no such weights: {', '.join(missing)}")
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    args.out = args.out or Path(tempfile.mkdtemp(prefix="reinforge-paired-eval-"))
    args.out.mkdir(parents=True, exist_ok=True)
    spec = ENVS[args.env]
    config = spec.example / spec.rl
    maps = (
        new_frozen_lake_maps(args.maps, args.out / "maps.jsonl", skip=args.skip)
        if args.maps
        else None
    )
    rows = maps or config.parent / eval_taskset(config)["path"]
    tasks = sum(1 for line in rows.read_text().splitlines() if line)
    overrides = [
        f"model.model_path={args.model}",
        *eval_overrides(config, tasks * args.games, maps),
        *args.extra,
    ]
    print(f"{args.env}: {len(args.named)} policies x {tasks} tasks x {args.games} games; "
          f"output {args.out}", flush=True)  # fmt: skip
    digest = hashlib.sha256(rows.read_bytes()).hexdigest()
    scores: dict[str, dict[str, float]] = {}
    for name, weights in args.named.items():
        run_dir = args.out / "runs" / name
        # what this eval was: an earlier call's eval of the same weights on the same
        # tasks (same --out) is reused, so policies can be added one call at a time
        done = args.out / "runs" / f"{name}.json"
        what = {"weights": str(weights.resolve()), "overrides": overrides, "tasks": digest}
        if done.is_file() and json.loads(done.read_text()) == what:
            print(f"  {name}: reusing the eval in {run_dir}", flush=True)
        else:
            if run_dir.exists():
                raise SystemExit(f"{run_dir} holds another eval: use another --out or NAME")
            init = [f"model.init_from={weights.resolve()}", *overrides]
            reinforge_run(config, run_dir, init, args.in_process, args.threads, command="eval")
            done.write_text(json.dumps(what))
        scores[name] = task_scores(run_dir, spec.eval_name)
        print(f"  {name}: {sum(scores[name].values()) / len(scores[name]):.3f}", flush=True)
    result = compare(scores)
    result["settings"] = {k: str(v) for k, v in vars(args).items() if k != "named"}
    (args.out / "paired.json").write_text(json.dumps(result, indent=2))
    report(result)
    print(f"wrote {args.out / 'paired.json'}")
    return result


if __name__ == "__main__":
    main()
