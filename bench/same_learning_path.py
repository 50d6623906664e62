"""Does a refactor leave learning unchanged? An older commit against the working tree,
on the same config and seed, compared token for token.

Why: a whole demo run cannot answer it. With 16 runners the engine batches requests in
the order they arrive, so two runs of the same code and seed differ (held-out mean@4
at step 16 has spread 0.6-0.8 between such runs), and a handful of runs per side
cannot tell a small regression from that noise. The two halves of the learning path
are deterministic on their own, though:

1. Rollouts: ``mode=explore`` with one runner (requests reach the engine one at a
   time) and a fixed seed stores the same tokens, log-probs, masks and rewards on
   every run of the same code. Both trees explore ``--steps`` steps; the buffers are
   compared experience by experience.
2. Updates: ``mode=train`` on one stored buffer (the working tree's) is deterministic
   on CPU. Both trees train ``--steps`` steps on copies of it; every logged train
   metric is compared.

Prints the differences found; exit 1 when any. Example (issue 23's refactor)::

    .venv/bin/python bench/same_learning_path.py --base e0df5b1
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TIMING = re.compile(r"time|per_min|per_s")  # wall-clock metrics differ on every run
FIELDS = ("tokens", "action_mask", "logprobs", "reward", "prompt_length")


def as_plain(value: object) -> object:
    return value.tolist() if hasattr(value, "tolist") else value


def compare_buffers(old_path: Path, new_path: Path) -> int:
    """Print how many experiences differ per field; return the total."""
    sys.path.insert(0, str(ROOT / "src"))
    from reinforge.buffer import SQLiteExperienceStorage

    def load(path: Path) -> dict:
        return {
            (e.eid.batch, e.eid.task, e.eid.run): e for e in SQLiteExperienceStorage(path).read()
        }

    old, new = load(old_path), load(new_path)
    both = old.keys() & new.keys()
    lonely = len(old.keys() ^ new.keys())
    print(f"  experiences: {len(old)} old, {len(new)} new, {lonely} on one side only")
    total = lonely
    for field in FIELDS:
        differ = sum(
            as_plain(getattr(old[k], field)) != as_plain(getattr(new[k], field)) for k in both
        )
        print(f"  {field} differs in {differ}")
        total += differ
    return total


def reinforge(tree: Path, run_dir: Path, config: str, *overrides: str) -> None:
    cmd = [
        sys.executable,
        "-m",
        "reinforge.cli.main",
        "run",
        "-c",
        config,
        "--run-dir",
        str(run_dir),
    ]
    for item in (
        "seed=7",
        "explorer.eval_interval=null",
        "explorer.eval_on_start=false",
        *overrides,
    ):
        cmd += ["--set", item]
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: reinforge run exited {proc.returncode}\n{proc.stderr[-4000:]}")


def train_rows(run_dir: Path) -> list[dict]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [r for r in rows if any(k.startswith("train/") for k in r)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="the older commit (any git ref)")
    parser.add_argument("--config", default="examples/arithmetic/grpo.yaml")
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="same-path-"))
    base_tree = work / "base"
    subprocess.run(["git", "worktree", "add", "-q", "--detach", str(base_tree), args.base],
                   cwd=ROOT, check=True)  # fmt: skip
    trees = {"old": base_tree, "new": ROOT}
    try:
        steps = f"buffer.total_steps={args.steps}"
        for side, tree in trees.items():
            reinforge(tree, work / f"explore-{side}", args.config, "mode=explore", steps,
                      "explorer.runner_concurrency=1")  # fmt: skip
        print(f"rollouts ({args.steps} steps, one runner, seed 7):")
        differ = compare_buffers(
            work / "explore-old" / "buffer.db", work / "explore-new" / "buffer.db"
        )
        trained = {}
        for side, tree in trees.items():
            run_dir = work / f"train-{side}"
            run_dir.mkdir()
            shutil.copy(work / "explore-new" / "buffer.db", run_dir / "buffer.db")
            reinforge(tree, run_dir, args.config, "mode=train", steps,
                      "checkpoint.save_interval=null")  # fmt: skip
            trained[side] = train_rows(run_dir)
        print(f"updates ({args.steps} steps on the new tree's rollouts):")
        for old, new in zip(trained["old"], trained["new"], strict=True):
            keys = sorted(
                k
                for k in old.keys() | new.keys()
                if k.startswith("train/") and not TIMING.search(k)
            )
            changed = [k for k in keys if old.get(k) != new.get(k)]
            differ += len(changed)
            loss = new.get("train/loss")
            print(f"  step {new['step']}: loss {loss} grad_norm {new.get('train/grad_norm')}; "
                  f"{len(keys) - len(changed)} of {len(keys)} train metrics equal"
                  + (f", differ: {changed}" if changed else ""))  # fmt: skip
        print("verdict:", "identical" if not differ else f"{differ} differences")
        sys.exit(1 if differ else 0)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(base_tree)], cwd=ROOT)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
