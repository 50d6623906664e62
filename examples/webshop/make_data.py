"""Write the WebShop tasksets and demonstrations shipped in ``data/`` (deterministic).

    python examples/webshop/make_data.py --test 50 --demos 64

Each taskset row is ``{"session_id": N}``: goal ``N`` of the catalogue shipped with
reinforge (``reinforge/envs/webshop/data/goals.jsonl``; rebuild it with
``python tools/webshop_catalogue.py`` in a checkout). As in WebShop, the first goals are
held out for testing (``test.jsonl``) and the rest train (``train.jsonl``).

``demonstrations.jsonl`` holds, for ``--demos`` goals that neither taskset holds
(new attribute, option and budget draws for the products of training goals, so no
test goal's product is ever demonstrated:
``reinforge.envs.webshop.demonstration.new_goals``), the conversation an oracle
shopper has (``demonstration``: search the instruction, open the goal's product,
choose its options, buy, for the full reward 1.0), written as ``webshop_workflow``
has it with ``max_env_steps: 6``, for the supervised warm start of ``sft.yaml``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from reinforge.envs.webshop import Catalogue
from reinforge.envs.webshop.demonstration import demonstration, new_goals
from reinforge.envs.webshop.settings import WebShopSettings

#: the action budget of the demonstrations (and of sft.yaml's and grpo_from_sft.yaml's
#: episodes): search, a results page turned, open, two options, buy
DEMO_STEPS = 6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test", type=int, default=50, help="goals 0..N-1 are the test set")
    parser.add_argument("--demos", type=int, default=64, help="oracle conversations to write")
    parser.add_argument("--seed", type=int, default=0, help="seed of the demonstrations' goals")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "data")
    args = parser.parse_args(argv)
    catalogue = Catalogue.default()
    goals = len(catalogue.goals)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, ids in (("test", range(args.test)), ("train", range(args.test, goals))):
        with open(args.out / f"{name}.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps({"session_id": i}) + "\n" for i in ids)
    train_asins = [catalogue.goal(i)["asin"] for i in range(args.test, goals)]
    demo_goals = new_goals(catalogue, train_asins[:: max(1, len(train_asins) // args.demos)],
                           args.demos, seed=args.seed)  # fmt: skip
    with open(args.out / "demonstrations.jsonl", "w", encoding="utf-8") as fh:
        for goal in demo_goals:
            demo = demonstration(WebShopSettings(goal=goal, max_env_steps=DEMO_STEPS))
            if demo["reward"] < 0.99:
                raise RuntimeError(f"the oracle scored {demo['reward']} on {goal}")
            fh.write(json.dumps({"messages": demo["messages"]}) + "\n")
    print(
        f"wrote {args.test} test and {goals - args.test} train tasks and "
        f"{len(demo_goals)} demonstrations to {args.out}"
    )


if __name__ == "__main__":
    main()
