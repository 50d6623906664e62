"""Mode ``both`` with and without ``synchronizer.overlap``: rollouts per minute of the
demo, side by side in one run.

    .venv/bin/python bench/overlap.py [--steps 4] [--config examples/arithmetic/grpo.yaml]

Both runs use ``sync_offset: 1`` (so both sample each step with weights one version
old, and differ only in whether the step being trained runs while the next one is
sampled), the same seed, no evaluation and no checkpoints. It prints each run's wall
time and rollouts/min (stored rollouts over the wall time from the first explored
step to the last trained one).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from run_cli import metric_rows, run_args

from reinforge.cli.main import app

ROOT = Path(__file__).resolve().parents[1]


def run(config: Path, steps: int, overlap: bool, extra: list[str]) -> tuple[float, int]:
    with tempfile.TemporaryDirectory(prefix="reinforge-overlap-") as folder:
        run_dir = Path(folder) / "run"
        overrides = [
            f"buffer.total_steps={steps}",
            "synchronizer.sync_offset=1",
            f"synchronizer.overlap={str(overlap).lower()}",
            "explorer.eval_on_start=false",
            "buffer.explorer_input.eval_tasksets=[]",
            "checkpoint.save_interval=null",
            "monitor.progress=false",
            "monitor.plot=false",
            "monitor.tensorboard=false",
            "seed=1",
            *extra,
        ]
        args = run_args(config, run_dir, overrides)
        start = time.perf_counter()
        code = app(args, standalone_mode=False)
        if code:
            raise SystemExit(f"reinforge run exited with {code}")
        wall = time.perf_counter() - start
        rows = metric_rows(run_dir)
        rollouts = sum(int(r.get("explore/experiences", 0)) for r in rows)
    return wall, rollouts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--config", type=Path, default=ROOT / "examples/arithmetic/grpo.yaml")
    parser.add_argument("--set", action="append", default=[], dest="extra")
    args = parser.parse_args()
    results = {}
    for overlap in (False, True):
        wall, rollouts = run(args.config, args.steps, overlap, args.extra)
        results[overlap] = rollouts / wall * 60
        print(
            f"overlap={str(overlap).lower():5}  {args.steps} steps in {wall:.0f} s, "
            f"{rollouts} rollouts, {results[overlap]:.0f} rollouts/min"
        )
    print(f"overlap / sequential: {results[True] / results[False]:.2f}x")


if __name__ == "__main__":
    main()
