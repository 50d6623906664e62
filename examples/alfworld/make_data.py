"""Write the ALFWorld tasksets shipped in ``data/`` (deterministic).

    python examples/alfworld/make_data.py

Each row names a game shipped with reinforge (``{"game": name, "task_type": ...,
"goal": ...}``; the games are ``reinforge/envs/alfworld/data/``, rebuilt by
``python -m reinforge.envs.alfworld.generate``): one scene of each task type
is held out for testing, the others train. For the official games write rows with
``game_file`` instead (``--official DIR``: every ``game.tw-pddl`` under ``DIR``, e.g.
``$ALFWORLD_DATA/json_2.1.1/train``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from reinforge.envs.alfworld import shipped_games


def _official(root: Path, out: Path, name: str) -> None:
    files = sorted(root.expanduser().rglob("game.tw-pddl"))
    with open(out / f"{name}.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"game_file": str(f)}) + "\n" for f in files)
    print(f"wrote {len(files)} official games from {root} to {out / name}.jsonl")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "data")
    parser.add_argument("--official", type=Path, help="a directory of official game.tw-pddl files")
    parser.add_argument("--name", default="official", help="the taskset name for --official")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.official is not None:
        _official(args.official, args.out, args.name)
        return
    games = shipped_games().values()
    for split in ("train", "test"):
        rows = [
            {"game": g["name"], "task_type": g["task_type"], "goal": g["goal"]}
            for g in games
            if g["split"] == split
        ]
        with open(args.out / f"{split}.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(row) + "\n" for row in rows)
        print(f"wrote {len(rows)} {split} tasks to {args.out}")


if __name__ == "__main__":
    main()
