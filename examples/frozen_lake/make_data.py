"""Generate the FrozenLake taskset shipped in ``data/`` (deterministic).

    python examples/frozen_lake/make_data.py --train 48 --test 16 --demos 512 --size 4 --p 0.8

Each task row is ``{"seed": 7, "size": 4, "p": 0.8}``: the frozen_lake_workflow draws
the map from these (start and goal at random frozen tiles, always solvable).
``shortest`` (the number of moves an optimal walker needs) is informational; the
workflow ignores it.

``demonstrations.jsonl`` holds, for ``--demos`` further maps, the conversation an
optimal player has (``reinforge.envs.frozen_lake.workflow.demonstration``: the
workflow's own system prompt, observations and feedback), for the supervised warm
start of ``sft.yaml``. Train, test and demonstration maps never share a map. Its
observations carry the ``show_surroundings`` lines (``--no-show-surroundings`` for
the grid alone), as the configs' workflow_args ask.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from reinforge.envs.frozen_lake.env import generate_map, shortest_moves
from reinforge.envs.frozen_lake.workflow import FrozenLakeSettings, demonstration


def distinct_maps(count: int, size: int, p: float) -> list[dict]:
    """``count`` task rows with pairwise different maps, seeds counted up from 0."""
    rows: list[dict] = []
    seen: set[tuple[str, ...]] = set()
    seed = 0
    while len(rows) < count:
        desc = tuple(generate_map(size, p, seed))
        if desc not in seen:
            seen.add(desc)
            shortest = len(shortest_moves(list(desc)))
            rows.append({"seed": seed, "size": size, "p": p, "shortest": shortest})
        seed += 1
    return rows


def write_jsonl(path: Path, items: list[dict]) -> None:
    with open(path, "w") as fh:
        for item in items:
            fh.write(json.dumps(item) + "\n")
    print(f"{path}: {len(items)} rows")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=48)
    parser.add_argument("--test", type=int, default=16)
    parser.add_argument("--demos", type=int, default=512)
    parser.add_argument("--size", type=int, default=4)
    parser.add_argument("--p", type=float, default=0.8)
    parser.add_argument(
        "--show-surroundings",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="demonstrations whose observations say where the goal is and what each move "
        "reaches (the workflow's show_surroundings, which the configs set too)",
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "data")
    args = parser.parse_args(argv)
    rows = distinct_maps(args.train + args.test + args.demos, args.size, args.p)
    train, test = rows[: args.train], rows[args.train : args.train + args.test]
    demos = [
        demonstration(
            FrozenLakeSettings(
                size=r["size"], p=r["p"], seed=r["seed"], show_surroundings=args.show_surroundings
            )
        )
        for r in rows[args.train + args.test :]
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "train.jsonl", train)
    write_jsonl(args.out / "test.jsonl", test)
    write_jsonl(args.out / "demonstrations.jsonl", demos)


if __name__ == "__main__":
    main()
