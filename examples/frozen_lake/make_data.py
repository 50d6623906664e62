"""Generate the FrozenLake taskset shipped in ``data/`` (deterministic).

    python examples/frozen_lake/make_data.py --train 48 --test 16 --size 4 --p 0.8

Each row is ``{"seed": 7, "size": 4, "p": 0.8}``: the frozen_lake_workflow draws the
map from these (start and goal at random frozen tiles, always solvable). Train and
test use disjoint seeds and never share a map. ``shortest`` (the number of moves an
optimal walker needs) is informational; the workflow ignores it.
"""

from __future__ import annotations

import argparse
import json
from collections import deque
from pathlib import Path

from reinforge.workflows.envs.frozen_lake_env import generate_map


def shortest_path(desc: list[str]) -> int:
    size = len(desc)
    start = next((r, c) for r in range(size) for c in range(size) if desc[r][c] == "S")
    dist = {start: 0}
    todo = deque([start])
    while todo:
        r, c = todo.popleft()
        if desc[r][c] == "G":
            return dist[(r, c)]
        for nr, nc in ((r, c - 1), (r + 1, c), (r, c + 1), (r - 1, c)):
            ok = 0 <= nr < size and 0 <= nc < size and desc[nr][nc] != "H"
            if ok and (nr, nc) not in dist:
                dist[(nr, nc)] = dist[(r, c)] + 1
                todo.append((nr, nc))
    raise ValueError("unsolvable map")  # generate_map never returns one


def generate(n_train: int, n_test: int, size: int, p: float) -> tuple[list[dict], list[dict]]:
    rows: list[dict] = []
    seen: set[tuple[str, ...]] = set()
    seed = 0
    while len(rows) < n_train + n_test:
        desc = tuple(generate_map(size, p, seed))
        if desc not in seen:
            seen.add(desc)
            rows.append({"seed": seed, "size": size, "p": p, "shortest": shortest_path(list(desc))})
        seed += 1
    return rows[:n_train], rows[n_train:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=48)
    parser.add_argument("--test", type=int, default=16)
    parser.add_argument("--size", type=int, default=4)
    parser.add_argument("--p", type=float, default=0.8)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "data")
    args = parser.parse_args()
    train, test = generate(args.train, args.test, args.size, args.p)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train", train), ("test", test)):
        with open(args.out / f"{name}.jsonl", "w") as fh:
            for row in rows:
                fh.write(json.dumps(row) + "\n")
        print(f"{args.out / name}.jsonl: {len(rows)} maps")


if __name__ == "__main__":
    main()
