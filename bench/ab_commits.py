"""One bench script, an older commit against the working tree, side by side in one run.

Why: timings on a shared machine drift 25-45% over an hour, so "no slowdown" can only
be shown by running the old code and the new code alternately under the same load.
This script checks the old commit out into a temporary git worktree, then runs the
given bench script ``--rounds`` times in each tree (alternating which goes first),
each time with that tree's ``src`` first on ``PYTHONPATH``, and pulls numbers out of
the printed output with the ``--metric`` regular expressions.

Printed: every round's numbers, then per metric the median of each side and the ratio
new / old. Example (the explorer's bookkeeping, issue 23's refactor)::

    .venv/bin/python bench/ab_commits.py --base e0df5b1 --rounds 3 \\
        --metric 'exp/s=experiences/s: median ([0-9,.]+)' \\
        -- bench/explorer_overhead.py --tasks 5000 --repeats 1 --no-builtin-reward

A script whose internals changed between the commits is run as each commit has it
(each tree's own copy), which is the point: the same measurement, the code of each
commit. A script that exists only in the working tree (or whose older copy measures
something else) runs with ``--script-from-new``: the working tree's copy in both
trees, each with its own ``src`` and its own directory (so a config path relative to
the current directory is each commit's own). ``--first`` picks the side that opens
round 1, so that repeated ``--rounds 1`` invocations (one per hold of a lock) still
alternate. ``--new REF`` measures a commit instead of the working tree (checked out
in a second temporary worktree): in a checkout that others edit at the same time, the
working tree holds their unfinished changes.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def parse_metric(text: str) -> tuple[str, re.Pattern[str]]:
    """``name=regex`` with one group that captures a number (commas allowed)."""
    name, sep, pattern = text.partition("=")
    if not sep or not name or not pattern:
        raise argparse.ArgumentTypeError(f"--metric wants name=regex, got {text!r}")
    compiled = re.compile(pattern)
    if compiled.groups != 1:
        raise argparse.ArgumentTypeError(f"--metric {name}: the regex needs exactly one group")
    return name, compiled


def side_order(round_: int, first: str) -> list[str]:
    """The sides of round ``round_`` (0-based) in the order they run: ``first`` opens
    the even rounds, the other side the odd ones."""
    order = ["old", "new"] if first == "old" else ["new", "old"]
    return order if round_ % 2 == 0 else order[::-1]


def run_side(
    tree: Path,
    script: list[str],
    metrics: list[tuple[str, re.Pattern[str]]],
    script_tree: Path | None = None,
    echo: bool = False,
) -> dict:
    """Run ``script`` in ``tree`` with its ``src``; the script file is taken from
    ``script_tree`` (default: ``tree``)."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    proc = subprocess.run(
        [sys.executable, str((script_tree or tree) / script[0]), *script[1:]],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: {script[0]} exited {proc.returncode}\n{proc.stderr[-4000:]}")
    if echo:
        print(proc.stdout, end="", flush=True)
    found: dict[str, float] = {}
    for name, pattern in metrics:
        match = pattern.search(proc.stdout)
        if match is None:
            raise SystemExit(f"{tree}: metric {name} not found in the output:\n{proc.stdout}")
        found[name] = float(match.group(1).replace(",", ""))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the older commit (any git ref)")
    parser.add_argument(
        "--new", default=None, help="the newer commit (default: the working tree as it is)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--metric", type=parse_metric, action="append", required=True)
    parser.add_argument(
        "--script-from-new",
        action="store_true",
        help="run the working tree's copy of the script in both trees",
    )
    parser.add_argument("--echo", action="store_true", help="print each run's output")
    parser.add_argument(
        "--first", choices=("old", "new"), default="old", help="the side that opens round 1"
    )
    parser.add_argument("script", nargs=argparse.REMAINDER, help="-- bench/x.py [args]")
    args = parser.parse_args()
    # a kill (SIGTERM) still removes the temporary worktree
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    script = args.script[1:] if args.script[:1] == ["--"] else args.script
    if not script:
        parser.error("name the bench script after --")
    with tempfile.TemporaryDirectory(prefix="reinforge-ab-") as tmp:
        sides = {"old": Path(tmp) / "base", "new": ROOT}
        if args.new is not None:
            sides["new"] = Path(tmp) / "new"
        worktrees = [(sides["old"], args.base)] + (
            [(sides["new"], args.new)] if args.new is not None else []
        )
        try:
            for folder, ref in worktrees:
                subprocess.run(
                    ["git", "worktree", "add", "--detach", "--quiet", str(folder), ref],
                    cwd=ROOT,
                    check=True,
                )
            results: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
            script_tree = ROOT if args.script_from_new else None
            for round_ in range(args.rounds):
                for side in side_order(round_, args.first):
                    found = run_side(sides[side], script, args.metric, script_tree, args.echo)
                    results[side].append(found)
                    print(f"round {round_ + 1} {side}: {results[side][-1]}", flush=True)
        finally:
            for folder, _ in worktrees:
                if folder.exists():
                    subprocess.run(["git", "worktree", "remove", "--force", str(folder)], cwd=ROOT)
    new = args.new if args.new is not None else "the working tree"
    print(f"\n{' '.join(script)}: {args.base} (old) vs {new} (new)")
    print(f"{'metric':<24} {'old median':>12} {'new median':>12} {'new/old':>8}")
    for name, _ in args.metric:
        before = statistics.median(r[name] for r in results["old"])
        after = statistics.median(r[name] for r in results["new"])
        print(f"{name:<24} {before:12.3f} {after:12.3f} {after / before:8.3f}")


if __name__ == "__main__":
    main()
