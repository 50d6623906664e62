"""Do multi-step agents learn? Base model, SFT warm start, then each RL algorithm from
that warm start, over seeds, on an environment's held-out tasks.

    .venv/bin/python bench/agent_learning.py --env frozen_lake [--seeds 3] [--rl-steps 8]
        [--sft-steps N] [--eval-games 64] [--model smollm2-135m-instruct] [--out DIR]
        [--jobs 2]

For each seed it runs (``reinforge run``, one process each unless ``--in-process``;
``--jobs N`` runs N seeds side by side, each process with cores / N torch threads;
``--reuse-sft`` starts from the warm starts an earlier call left in ``--out``):

1. the example's ``sft.yaml`` with ``--sft-steps`` steps (default: its own), evaluated before (the **base**
   model) and after (the **warm start**) on the held-out tasks;
2. from that checkpoint (``model.init_from``), each algorithm of ``--algorithms``
   (default ``multi_step_grpo`` and ``gigpo``) for ``--rl-steps`` steps, both on the
   environment's step-wise workflow with the same tasks per step, the same rollouts
   per task and the same seed, evaluated every ``--eval-every`` steps. Only the
   algorithm differs: ``multi_step_grpo`` gives every step of a run its episode's
   group-normalised outcome; ``gigpo`` adds a step-level advantage among steps
   taken from the same state. No reward filter, so both see the same groups.

Held-out success is the eval taskset's ``workflow/success/mean`` (the episode workflow,
as the example's sft.yaml evaluates it) on ``--eval-games`` games. It prints, per
stage, the mean over seeds with its 95% t-interval (``seed_stats.interval``), the
paired ``gigpo - multi_step_grpo`` difference of the final held-out success with its
interval, each run's wall time and peak RSS (the run's process, from ``os.wait4``;
with ``--in-process`` this process's high-water mark so far), and writes
``results.json`` and ``curves.png`` (held-out success vs RL step, mean over seeds)
into ``--out``. Run folders live under ``--out`` too. ``--set KEY=VALUE`` goes to every
run, the SFT one included, so give only keys both configs have (``model.*``, ...).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from agent_learning_report import (  # noqa: E402, F401  (the script's names, as before)
    fmt,
    mean_curve,
    paired_difference,
    plot,
    report,
    summary,
)
from run_cli import metric_rows, run_args  # noqa: E402  (bench/run_cli.py)


@dataclass(frozen=True)
class EnvSpec:
    """Where an environment's example lives and how its step-wise RL runs."""

    example: Path
    sft: str  # the warm start's config in the example folder
    rl: str  # the RL config the algorithms start from (has an eval taskset)
    step_wise_workflow: str
    eval_name: str  # the eval taskset's name in both configs
    rl_overrides: tuple[str, ...] = ()


ENVS: dict[str, EnvSpec] = {
    "frozen_lake": EnvSpec(
        example=ROOT / "examples" / "frozen_lake",
        sft="sft.yaml",
        rl="grpo.yaml",
        step_wise_workflow="step_wise_frozen_lake_workflow",
        eval_name="frozen-lake-test",
    ),
    "webshop": EnvSpec(
        example=ROOT / "examples" / "webshop",
        sft="sft.yaml",
        rl="grpo_from_sft.yaml",
        step_wise_workflow="step_wise_webshop_workflow",
        eval_name="webshop-test",
    ),
}
BASELINE, CANDIDATE = "multi_step_grpo", "gigpo"
QUIET = ("monitor.progress=false", "monitor.tensorboard=false", "monitor.plot=false")


@dataclass
class Run:
    """One ``reinforge run``: what it was, how long it took, what it used, its evals."""

    name: str
    seed: int
    wall_s: float
    peak_rss_mb: float
    evals: list[tuple[int, float]] = field(default_factory=list)  # (step, success)


# ---- players that need no model --------------------------------------------------------


def frozen_lake_references(
    config: Path, games_per_map: int = 200, maps: Path | None = None
) -> dict[str, float]:
    """Success on the config's eval maps, or those in ``maps`` (at the eval's
    ``max_steps``), of four players that need
    no model, as the scale a learnt policy is read against: ``random`` picks one of the
    four moves uniformly, ``toward_goal`` one of the moves that shorten the distance to
    the goal whatever lies there (only the two positions read), ``toward_goal_safe`` the
    same among the moves that reach no hole (else any move that reaches none: what
    ``show_surroundings`` states, read one move at a time), ``shortest`` walks an
    optimal path (1.0 unless a map needs more than ``max_steps`` moves)."""
    import random

    from reinforge.envs.frozen_lake import env as fl

    taskset = eval_taskset(config)
    max_steps = int((taskset.get("workflow_args") or {}).get("max_steps", 10))
    path = maps or config.parent / taskset["path"]
    rows = [json.loads(line) for line in path.read_text().splitlines() if line]
    delta = fl.MOVE_DELTAS

    def closer(env: Any) -> list[int]:
        (r, c), (gr, gc) = env.position, env.goal
        distance = abs(gr - r) + abs(gc - c)
        return [
            a for a, (dr, dc) in delta.items() if abs(gr - r - dr) + abs(gc - c - dc) < distance
        ]

    def safe(env: Any) -> list[int]:
        return [a for a in fl.MOVES if env.tile_after(a) != "H"]

    def toward_goal(env: Any, rng: random.Random) -> int:
        return rng.choice(closer(env))

    def toward_goal_safe(env: Any, rng: random.Random) -> int:
        good = [a for a in closer(env) if a in safe(env)]
        return rng.choice(good or safe(env))

    players = {
        "random": lambda env, rng: rng.choice(fl.MOVES),
        "toward_goal": toward_goal,
        "toward_goal_safe": toward_goal_safe,
    }
    rng = random.Random(0)
    result: dict[str, float] = {}
    for name, player in players.items():
        wins = 0
        for row in rows:
            for _ in range(games_per_map):
                env = fl.TextFrozenLake(size=row["size"], p=row["p"], seed=row["seed"])
                for _ in range(max_steps):
                    if env.step(player(env, rng)).done:
                        break
                wins += env.success()
        result[name] = wins / (len(rows) * games_per_map)
    shortest = [len(fl.shortest_moves(fl.generate_map(r["size"], r["p"], r["seed"]))) for r in rows]
    result["shortest"] = sum(n <= max_steps for n in shortest) / len(rows)
    return result


REFERENCES = {"frozen_lake": frozen_lake_references}


def make_data_module() -> Any:
    """``examples/frozen_lake/make_data.py``, which writes the shipped maps."""
    path = ENVS["frozen_lake"].example / "make_data.py"
    spec = importlib.util.spec_from_file_location("make_data", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def new_frozen_lake_maps(count: int, path: Path, skip: int = 0) -> Path:
    """Write ``count`` task rows of maps that no shipped row has: the next ones of
    ``make_data.py``'s sequence after its training, test and demonstration maps, and
    after ``skip`` more (16 test maps resolve held-out success in steps of 1/16 when a
    policy plays each map the same way every time)."""
    make_data = make_data_module()
    data = ENVS["frozen_lake"].example / "data"
    shipped = sum(
        sum(1 for line in (data / name).read_text().splitlines() if line)
        for name in ("train.jsonl", "test.jsonl", "demonstrations.jsonl")
    )
    first = json.loads((data / "train.jsonl").read_text().splitlines()[0])
    start = shipped + skip
    rows = make_data.distinct_maps(start + count, first["size"], first["p"])[start:]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


# ---- running ----------------------------------------------------------------------------


def evals_of(run_dir: Path, eval_name: str) -> list[tuple[int, float]]:
    """``(step, held-out success)`` of every eval row in the run's metrics.jsonl."""
    key = f"eval/{eval_name}/workflow/success/mean"
    return [(int(r["step"]), float(r[key])) for r in metric_rows(run_dir) if key in r]


def reinforge_run(
    config: Path,
    run_dir: Path,
    overrides: list[str],
    in_process: bool,
    threads: int | None = None,
    command: str = "run",
) -> tuple[float, float]:
    """Run ``reinforge COMMAND -c config`` (``run``, or ``eval``); ``(wall seconds, peak
    RSS in MiB)``. ``threads`` sets the subprocess's ``OMP_NUM_THREADS`` (torch's
    intra-op threads)."""
    args = run_args(config, run_dir, [*overrides, *QUIET], command)
    start = time.perf_counter()
    if in_process:
        from reinforge.cli.main import app

        code = app(args, standalone_mode=False)
        wall = time.perf_counter() - start
        peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if code:
            raise SystemExit(f"reinforge {' '.join(args)} exited with {code}")
        return wall, peak_kb / 1024
    log = run_dir.parent / f"{run_dir.name}.log"
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    code = "from reinforge.cli.main import app; app()"
    with open(log, "w") as out:
        env = {**os.environ, "OMP_NUM_THREADS": str(threads)} if threads else None
        proc = subprocess.Popen(
            [sys.executable, "-c", code, *args], stdout=out, stderr=out, env=env
        )
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode:
        tail = log.read_text()[-3000:]
        raise SystemExit(f"reinforge {command} -c {config} exited with {proc.returncode}:\n{tail}")
    return wall, usage.ru_maxrss / 1024  # KB on Linux


def eval_taskset(config: Path) -> dict[str, Any]:
    """The config's first eval taskset, as written in its YAML."""
    raw = yaml.safe_load(config.read_text())
    return raw["buffer"]["explorer_input"]["eval_tasksets"][0]


def eval_overrides(config: Path, eval_games: int, tasks_path: Path | None = None) -> list[str]:
    """``--set`` items so the config's first eval taskset plays ``eval_games`` games:
    its first ``min(eval_games, rows)`` tasks, ``eval_games // rows`` times each; from
    ``tasks_path`` instead of its own file when given."""
    path = tasks_path or config.parent / eval_taskset(config)["path"]
    rows = sum(1 for line in path.read_text().splitlines() if line)
    tasks = max(1, min(eval_games, rows))
    repeat = max(1, eval_games // tasks)
    first = "buffer.explorer_input.eval_tasksets[0]"
    moved = [f"{first}.path={path.resolve()}"] if tasks_path else []
    return [*moved, f"{first}.limit={tasks}", f"{first}.repeat_times={repeat}"]


def rl_overrides(
    args: argparse.Namespace, spec: EnvSpec, sft_dir: Path, algorithm: str
) -> list[str]:
    """``--set`` items of an RL stage: ``algorithm`` from the warm start in ``sft_dir``
    with the step-wise workflow, ``--rl-steps`` steps of ``--batch-size`` tasks x
    ``--repeat-times`` (as many passes over the training tasks as that takes), evals
    every ``--eval-every`` steps, then ``--set``."""
    rl_config = spec.example / spec.rl
    return [
        f"model.init_from={sft_dir}", f"trainer.algorithm={algorithm}",
        f"buffer.explorer_input.taskset.default_workflow_type={spec.step_wise_workflow}",
        "explorer.rollout_model.enable_history=true",
        "buffer.experience_pipeline.operators=[]",  # no filter: gigpo's step level
        f"buffer.total_steps={args.rl_steps}", f"buffer.batch_size={args.batch_size}",
        f"buffer.total_epochs={args.rl_steps}",  # one step per epoch at worst: never short
        f"buffer.explorer_input.taskset.repeat_times={args.repeat_times}",
        *([f"buffer.explorer_input.taskset.path={args.train_tasks.resolve()}"] if args.train_tasks else []),
        # step 0 is the warm start, evaluated in the run on the same games as its steps
        "explorer.eval_on_start=true", f"explorer.eval_interval={args.eval_every}",
        "checkpoint.save_interval=null",
        *eval_overrides(rl_config, args.eval_games, args.eval_tasks),
        *spec.rl_overrides, *args.extra,
    ]  # fmt: skip


def run_seed(args: argparse.Namespace, spec: EnvSpec, seed: int, out: Path) -> list[Run]:
    model = [f"model.model_path={args.model}", f"seed={seed}"]
    sft_config, rl_config = spec.example / spec.sft, spec.example / spec.rl
    sft_dir = out / "runs" / f"seed{seed}" / "sft"
    sft_overrides = [
        *model, f"buffer.total_steps={args.sft_steps}", "explorer.eval_on_start=true",
        f"explorer.eval_interval={args.sft_steps}", f"checkpoint.save_interval={args.sft_steps}",
        *eval_overrides(sft_config, args.eval_games, args.eval_tasks), *args.extra,
    ]  # fmt: skip
    cost = sft_dir.parent / "sft_cost.json"  # the SFT run's wall time and peak RSS
    if args.reuse_sft and (sft_dir / "checkpoints").is_dir():
        recorded = json.loads(cost.read_text()) if cost.is_file() else {}
        wall, rss = recorded.get("wall_s", math.nan), recorded.get("peak_rss_mb", math.nan)
        print(f"seed {seed}  reusing the warm start in {sft_dir}", flush=True)
    else:
        wall, rss = reinforge_run(sft_config, sft_dir, sft_overrides, args.in_process, args.threads)
        cost.write_text(json.dumps({"wall_s": wall, "peak_rss_mb": rss}))
    evals = evals_of(sft_dir, spec.eval_name)
    if not evals or evals[0][0] != 0:
        raise SystemExit(f"{sft_dir}: no step-0 eval in metrics.jsonl")
    base = Run("base", seed, 0.0, 0.0, [evals[0]])
    sft = Run("sft", seed, wall, rss, [e for e in evals if e[0] > 0] or [evals[-1]])
    print(f"seed {seed}  base {base.evals[0][1]:.3f}  sft {sft.evals[-1][1]:.3f}  "
          f"({wall:.0f} s, {rss:.0f} MiB)", flush=True)  # fmt: skip
    runs = [base, sft]
    for algorithm in args.algorithms:
        run_dir = out / "runs" / f"seed{seed}" / algorithm
        overrides = [*model, *rl_overrides(args, spec, sft_dir, algorithm)]
        wall, rss = reinforge_run(rl_config, run_dir, overrides, args.in_process, args.threads)
        curve = evals_of(run_dir, spec.eval_name)
        runs.append(Run(algorithm, seed, wall, rss, curve))
        if curve and curve[0][0] == 0 and sft.evals[-1] != (args.sft_steps, curve[0][1]):
            # the warm start's level: the RL stage's step 0 (the same weights, and the
            # same eval games as the RL steps, also where --reuse-sft's SFT ran other ones)
            sft.evals.append((args.sft_steps, curve[0][1]))
        print(f"seed {seed}  {algorithm:16} " + "  ".join(f"s{s}:{v:.3f}" for s, v in curve)
              + f"  ({wall:.0f} s, {rss:.0f} MiB)", flush=True)  # fmt: skip
    return runs


def analyse(runs: list[Run], stages: list[str]) -> dict[str, Any]:
    """Final held-out success per stage over seeds, the gigpo - multi_step_grpo paired
    difference, mean curves, and each run's time and memory."""
    seeds = sorted({r.seed for r in runs})
    final = {
        stage: {r.seed: r.evals[-1][1] for r in runs if r.name == stage and r.evals}
        for stage in stages
    }
    result: dict[str, Any] = {
        "seeds": seeds,
        "stages": {s: summary([final[s][k] for k in seeds if k in final[s]]) for s in stages},
        "curves": {
            s: mean_curve([r.evals for r in runs if r.name == s])
            for s in stages
            if s not in ("base", "sft")
        },
        "runs": [asdict(r) for r in runs],
    }
    if BASELINE in final and CANDIDATE in final:
        common = [k for k in seeds if k in final[BASELINE] and k in final[CANDIDATE]]
        result["difference"] = {
            "name": f"{CANDIDATE} - {BASELINE}",
            **paired_difference(
                [final[CANDIDATE][k] for k in common], [final[BASELINE][k] for k in common]
            ),
        }
    return result


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", choices=sorted(ENVS), default="frozen_lake")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 1..N")
    parser.add_argument("--algorithms", nargs="+", default=[BASELINE, CANDIDATE])
    parser.add_argument("--sft-steps", type=int, default=None, help="default: sft.yaml's")
    parser.add_argument("--rl-steps", type=int, default=8)
    parser.add_argument("--eval-every", type=int, default=None, help="default: rl-steps / 2")
    parser.add_argument("--eval-games", type=int, default=64, help="held-out games per eval")
    parser.add_argument("--eval-maps", type=int, default=0,
                        help="FrozenLake: evaluate on this many new maps (none in the shipped "
                        "rows) instead of the 16 test maps")  # fmt: skip
    parser.add_argument("--train-maps", type=int, default=0,
                        help="FrozenLake: RL on this many new maps (after the --eval-maps ones) "
                        "instead of the 48 training maps")  # fmt: skip
    parser.add_argument("--batch-size", type=int, default=4, help="tasks per RL step")
    parser.add_argument("--repeat-times", type=int, default=8, help="rollouts per task")
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--out", type=Path, default=None, help="default: a new temporary folder")
    parser.add_argument("--in-process", action="store_true", help="no subprocesses (tests)")
    parser.add_argument("--reuse-sft", action="store_true",
                        help="start from the SFT runs an earlier call left in --out (same "
                        "seeds), running only the RL stages")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=1,
                        help="seeds run side by side, each run with cores / jobs torch threads")  # fmt: skip
    parser.add_argument("--set", action="append", default=[], dest="extra",
                        help="a --set override for every run")  # fmt: skip
    args = parser.parse_args(argv)
    if args.jobs < 1 or (args.jobs > 1 and args.in_process):
        parser.error("--jobs must be at least 1, and 1 with --in-process")
    args.threads = max(1, (os.cpu_count() or 1) // args.jobs) if args.jobs > 1 else None
    if args.eval_every is None:
        args.eval_every = max(1, args.rl_steps // 2)
    if args.eval_maps < 0 or args.train_maps < 0:
        parser.error("--eval-maps and --train-maps count maps: 0 or more")
    if (args.eval_maps or args.train_maps) and args.env != "frozen_lake":
        parser.error("--eval-maps and --train-maps are for --env frozen_lake")
    args.eval_tasks = args.train_tasks = None  # set by main() from --eval-maps, --train-maps
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    # made here, not in parse_args: checking arguments leaves no folder behind
    args.out = args.out or Path(tempfile.mkdtemp(prefix=f"agent-learning-{args.env}-"))
    spec = ENVS[args.env]
    if args.sft_steps is None:
        sft_config = yaml.safe_load((spec.example / spec.sft).read_text())
        args.sft_steps = int(sft_config["buffer"]["total_steps"])
    args.out.mkdir(parents=True, exist_ok=True)
    if args.eval_maps:
        args.eval_tasks = new_frozen_lake_maps(args.eval_maps, args.out / "heldout_maps.jsonl")
    if args.train_maps:
        args.train_tasks = new_frozen_lake_maps(
            args.train_maps, args.out / "train_maps.jsonl", skip=args.eval_maps
        )
    print(f"{args.env}: {args.seeds} seeds, {args.sft_steps} SFT steps, {args.rl_steps} RL "
          f"steps of {args.batch_size} tasks x {args.repeat_times}, {args.eval_games} held-out "
          f"games per eval, model {args.model}; output {args.out}", flush=True)  # fmt: skip
    seeds = range(1, args.seeds + 1)
    if args.jobs == 1:  # in this thread: an in-process run installs signal handlers
        per_seed = [run_seed(args, spec, seed, args.out) for seed in seeds]
    else:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            per_seed = list(pool.map(lambda seed: run_seed(args, spec, seed, args.out), seeds))
    runs = [run for seed_runs in per_seed for run in seed_runs]
    result = analyse(runs, ["base", "sft", *args.algorithms])
    if args.env in REFERENCES:
        result["references"] = REFERENCES[args.env](spec.example / spec.rl, maps=args.eval_tasks)
    result["settings"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    (args.out / "results.json").write_text(json.dumps(result, indent=2))
    plot(result, args.out / "curves.png", f"{args.env}, {args.model}, {args.seeds} seeds")
    report(result)
    print(f"wrote {args.out / 'results.json'} and {args.out / 'curves.png'}")
    return result


if __name__ == "__main__":
    main()
