"""What a FrozenLake policy does in each state: how likely each move is, next to what the
observation says lies there, for several sets of weights side by side.

Held-out success counts games; it cannot tell a policy that became surer of moves it
already chose from one that changed its choice where it was wrong. This walks the
optimal path of each map (``--maps``, rows of ``seed``/``size``/``p``; by default the
shipped test maps) and, in every state on it, scores the four replies the workflow
accepts (```` ```Left``` ```` ... ```` ```Up``` ````, which differ in the move's name
only: its probability after the opening backticks) under each ``--weights`` (``base``
or a run directory / checkpoint, e.g. an SFT warm start and the RL runs from it). The
prompt of each state is the very conversation the workflow has there
(``show_surroundings`` on, as in the shipped configs), rendered with the model's chat
template.

Printed per weights, over the states: how often the most likely move steps into a hole
(the observation names it) or is an optimal move; the mean probability of moves into
holes, of optimal moves and of the most likely move (how sure the policy is), the four
replies' probabilities renormalised (``mass``: how much of the model's probability the
four hold before that); and the maps whose first wrong top move came later or earlier
than under the first weights.

Run::

    .venv/bin/python bench/frozen_lake_moves.py --weights runs/frozen_lake/sft runs/frozen_lake/grpo
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections import deque
from pathlib import Path
from typing import Any

import torch

from reinforge.envs.frozen_lake import env as fl
from reinforge.envs.frozen_lake.workflow import FrozenLakeSettings, demonstration
from reinforge.models.catalog import resolve_model_path
from reinforge.models.engines.hf import load_causal_lm
from reinforge.models.tokenizer import HFChatTokenizer
from reinforge.models.wrapper.chat_prompts import ChatPrompts
from reinforge.trainer.init_weights import init_weights, load_into

REPO = Path(__file__).resolve().parents[1]
TEST_MAPS = REPO / "examples" / "frozen_lake" / "data" / "test.jsonl"


def distances_to_goal(desc: list[str]) -> dict[tuple[int, int], int]:
    """Moves from each cell to the goal, walking around holes (BFS from the goal)."""
    size = len(desc)
    goal = next((r, row.index("G")) for r, row in enumerate(desc) if "G" in row)
    seen = {goal: 0}
    todo = deque([goal])
    while todo:
        r, c = todo.popleft()
        for dr, dc in fl.MOVE_DELTAS.values():
            nr, nc = r + dr, c + dc
            inside = 0 <= nr < size and 0 <= nc < size
            if inside and desc[nr][nc] != "H" and (nr, nc) not in seen:
                seen[(nr, nc)] = seen[(r, c)] + 1
                todo.append((nr, nc))
    return seen


def states(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The states on the map's optimal path: the conversation before each move, and what
    each of the four moves does there (``hole``, ``optimal``)."""
    settings = FrozenLakeSettings(
        size=int(row["size"]), p=float(row["p"]), seed=int(row["seed"]), show_surroundings=True
    )
    messages = demonstration(settings)["messages"]
    env = settings.make_env()  # walked along the demonstration's moves
    distance = distances_to_goal(env.desc)
    found = []
    for index, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        (r, c), here = env.position, distance[env.position]
        kinds = {}
        for move, (dr, dc) in fl.MOVE_DELTAS.items():
            tile = env.tile_after(move)
            closer = distance.get((r + dr, c + dc)) == here - 1  # None: no path from there
            kinds[move] = {"hole": tile == "H", "optimal": tile not in (None, "H") and closer}
        found.append({"map": row["seed"], "messages": messages[:index], "moves": kinds})
        env.step(fl.parse_action(message["content"]))
    return found


@torch.no_grad()
def move_probabilities(
    model: Any, tokenizer: Any, prompts: ChatPrompts, batch: list[dict]
) -> list[tuple[dict[int, float], float]]:
    """Per state: the probability of each move's name after the reply's opening
    backticks, renormalised over the four, and the four's total probability (that of
    the opening backticks included). The four replies differ only in that token."""
    fence, *_ = tokenizer.encode("```Left```")
    names = {m: tokenizer.encode(f"```{fl.ACTION_NAMES[m]}```")[1] for m in fl.MOVE_DELTAS}
    rows = [[*tokenizer.encode(prompts.render_text(s["messages"])), fence] for s in batch]
    width = max(len(ids) for ids in rows)
    input_ids = torch.zeros(len(rows), width, dtype=torch.long)
    attention = torch.zeros(len(rows), width, dtype=torch.long)
    for i, ids in enumerate(rows):
        input_ids[i, : len(ids)] = torch.tensor(ids)
        attention[i, : len(ids)] = 1
    logits = model(input_ids=input_ids, attention_mask=attention).logits.float()
    found = []
    for i, ids in enumerate(rows):
        p_fence = float(torch.softmax(logits[i, len(ids) - 2], -1)[fence])
        probs = torch.softmax(logits[i, len(ids) - 1], -1)
        moves = {m: float(probs[token]) for m, token in names.items()}
        total = sum(moves.values())
        found.append(({m: v / total for m, v in moves.items()}, p_fence * total))
    return found


def top(probs: dict[int, float]) -> int:
    """The most likely move."""
    return max(probs, key=probs.get)


def summarise(results: list[tuple[dict, dict, float]]) -> dict[str, float]:
    with_hole = [(s, p) for s, p, _ in results if any(k["hole"] for k in s["moves"].values())]
    return {
        "states": len(results),
        "top move into a hole": sum(s["moves"][top(p)]["hole"] for s, p, _ in results)
        / len(results),
        "top move optimal": sum(s["moves"][top(p)]["optimal"] for s, p, _ in results)
        / len(results),
        "P(hole) where one is near": statistics.mean(
            sum(v for m, v in p.items() if s["moves"][m]["hole"]) for s, p in with_hole
        ),
        "P(top move)": statistics.mean(max(p.values()) for _, p, _ in results),
        "P(optimal)": statistics.mean(
            sum(v for m, v in p.items() if s["moves"][m]["optimal"]) for s, p, _ in results
        ),
        "mass": statistics.mean(m for _, _, m in results),
    }


def first_mistakes(results: list[tuple[dict, dict, float]]) -> dict[Any, int | None]:
    """Per map: how many messages precede the first state whose top move is not optimal
    (None: the top move is optimal all along the path)."""
    out: dict[Any, int | None] = {}
    for state, probs, _ in results:
        key = state["map"]
        out.setdefault(key, None)
        if out[key] is None and not state["moves"][top(probs)]["optimal"]:
            out[key] = len(state["messages"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", nargs="+", required=True, help="base, or run dirs")
    parser.add_argument("--maps", type=Path, default=TEST_MAPS)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    base = resolve_model_path("smollm2-135m-instruct")
    rows = [json.loads(line) for line in args.maps.read_text().splitlines() if line.strip()]
    every = [state for row in rows for state in states(row)]
    print(f"{len(rows)} maps of {args.maps}, {len(every)} states on their optimal paths")
    summaries, mistakes = {}, {}
    for name in args.weights:
        model, hf = load_causal_lm(base, "cpu", torch.float32)
        if name != "base":
            load_into(model, init_weights(name, base), name)
        model.eval()
        tokenizer = HFChatTokenizer(hf)
        prompts = ChatPrompts(tokenizer, None)
        results = []
        for start in range(0, len(every), 8):
            batch = every[start : start + 8]
            scored = move_probabilities(model, tokenizer, prompts, batch)
            results += [(s, p, m) for s, (p, m) in zip(batch, scored, strict=True)]
        summaries[name] = summarise(results)
        mistakes[name] = first_mistakes(results)
    keys = list(next(iter(summaries.values())))
    print(f"{'weights':<48} " + " ".join(f"{k:>26}" for k in keys))
    for name, summary in summaries.items():
        cells = " ".join(f"{summary[k]:>26.3f}" for k in keys)
        print(f"{name[-48:]:<48} {cells}")
    first = args.weights[0]
    for name in args.weights[1:]:
        better = worse = 0
        for key, before in mistakes[first].items():
            # None (no wrong top move on the path) counts as the latest
            b, a = (math.inf if x is None else x for x in (before, mistakes[name][key]))
            better += a > b
            worse += a < b
        print(f"{name[-48:]}: maps whose first wrong top move came later {better}, earlier {worse}")


if __name__ == "__main__":
    main()
