"""Write the WebShop tasksets shipped in ``data/`` (deterministic).

    python examples/webshop/make_data.py --test 50

Each row is ``{"session_id": N}``: goal ``N`` of the catalogue shipped with reinforge
(``reinforge/envs/webshop/data/goals.jsonl``; rebuild it with
``python -m reinforge.envs.webshop.generate``). As in WebShop, the first
goals are held out for testing and the rest train.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from reinforge.envs.webshop import Catalogue


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test", type=int, default=50, help="goals 0..N-1 are the test set")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "data")
    args = parser.parse_args()
    goals = len(Catalogue.default().goals)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, ids in (("test", range(args.test)), ("train", range(args.test, goals))):
        with open(args.out / f"{name}.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps({"session_id": i}) + "\n" for i in ids)
    print(f"wrote {args.test} test and {goals - args.test} train tasks to {args.out}")


if __name__ == "__main__":
    main()
