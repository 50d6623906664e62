"""The demo's wall time, phase by phase: one shortened ``reinforge run`` of
``examples/arithmetic/grpo.yaml`` on one process, for old-against-new comparisons.

Why: a refactor of the trainer can slow the demo in a phase that no unit bench
covers (the step planner, the sync, the weight check, the checkpoint). This script
runs the demo as a user does (its own config, the ``hf`` engine, one process), cut to
``--steps`` training steps and, unless ``--eval``, without the evaluation, and prints
where the time went from the run's own metrics. It runs the config of the tree it is
started in (the current directory), so ``bench/ab_commits.py --script-from-new`` can
run it against an older commit's ``src`` and config::

    .venv/bin/python bench/ab_commits.py --base d25fc4d --rounds 3 --script-from-new \\
        --metric 'total=total: ([0-9.]+) s' --metric 'train=train step: ([0-9.]+) s' \\
        -- bench/demo_ab.py --steps 4

Printed (seconds): the command's wall time (model load and checkpoint included), the
part of it outside the steps' phases (start-up, checkpoint, plots, the end), the
median per step of the training step (``train/step_time``), the exploring step
(``explore/step_time``), the weight sync (``train/sync_time``) and the weight check
(``sync/verify_time`` plus, where the check is deferred, ``sync/verify_wait_time``:
the older commits decide it inside the sync, the newer ones behind it), and which
``reinforge`` package ran.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from run_cli import metric_rows, run_args

import reinforge
from reinforge.cli.main import app

#: the phases printed, each a sum of these metrics per step (missing ones count 0)
PHASES: dict[str, tuple[str, ...]] = {
    "train step": ("train/step_time",),
    "explore step": ("explore/step_time",),
    "sync": ("train/sync_time",),
    "weight check": ("sync/verify_time", "sync/verify_wait_time"),
}


def phase_medians(rows: list[dict]) -> dict[str, float]:
    """Per phase, the median over the steps that report any of its metrics."""
    medians: dict[str, float] = {}
    for phase, names in PHASES.items():
        per_step = [
            sum(row.get(n, 0.0) for n in names) for row in rows if any(n in row for n in names)
        ]
        medians[phase] = statistics.median(per_step) if per_step else 0.0
    return medians


def train_seconds_per_1k_tokens(rows: list[dict]) -> float:
    """The training step's median seconds per 1,000 trained tokens: the step's time
    follows how many groups the demo's ``reward_std_filter`` kept, which differs from
    run to run."""
    per_step = [
        1000 * row["train/step_time"] / row["train/tokens"]
        for row in rows
        if row.get("train/tokens") and "train/step_time" in row
    ]
    return statistics.median(per_step) if per_step else 0.0


def phase_totals(rows: list[dict]) -> float:
    """The seconds all steps spent in the phases, summed: what the run's wall time has
    on top of it is start-up (imports, model and engine load), checkpoints, plots and
    the end."""
    return sum(row.get(n, 0.0) for row in rows for names in PHASES.values() for n in names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4, help="training steps (the demo: 16)")
    parser.add_argument("--eval", action="store_true", help="keep the demo's evaluation")
    parser.add_argument("--config", type=Path, default=Path("examples/arithmetic/grpo.yaml"))
    parser.add_argument("--set", action="append", default=[], dest="extra")
    args = parser.parse_args()
    config = args.config.resolve()  # the current tree's, not this script's
    overrides = [f"buffer.total_steps={args.steps}", "monitor.progress=false"]
    if not args.eval:
        overrides += ["explorer.eval_on_start=false", "buffer.explorer_input.eval_tasksets=[]"]
    with tempfile.TemporaryDirectory(prefix="reinforge-demo-ab-") as folder:
        run_dir = Path(folder) / "run"
        start = time.perf_counter()
        code = app(run_args(config, run_dir, [*overrides, *args.extra]), standalone_mode=False)
        wall = time.perf_counter() - start
        if code:
            raise SystemExit(f"reinforge run exited with {code}")
        rows = [row for row in metric_rows(run_dir) if "step" in row]
    print(f"reinforge: {Path(reinforge.__file__).parent}")
    print(f"config: {config}  overrides: {' '.join(overrides + args.extra)}")
    print(f"total: {wall:.2f} s")
    print(f"outside the steps' phases: {wall - phase_totals(rows):.2f} s")
    for phase, seconds in phase_medians(rows).items():
        print(f"{phase}: {seconds:.3f} s (median per step)")
    print(f"train step per 1k tokens: {train_seconds_per_1k_tokens(rows):.3f} s (median)")
    trained = [r for r in rows if "train/tokens" in r]
    print(f"train tokens, each step: {' '.join(str(int(r['train/tokens'])) for r in trained)}")
    for phase, names in PHASES.items():  # every step, to see a load spike in one
        steps = [sum(r.get(n, 0.0) for n in names) for r in rows if any(n in r for n in names)]
        print(f"{phase}, each step: {' '.join(f'{x:.2f}' for x in steps)}")


if __name__ == "__main__":
    main()
