"""Writes data/rubric_train.jsonl and data/rubric_test.jsonl: short writing tasks, each
with a rubric of weighted criteria (what ``rubric_judge_workflow`` sends its judge).

    python examples/judges/make_data.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

NAMES = ["Ana", "Bilal", "Chen", "Dara", "Emil", "Farah", "Goran", "Hana", "Ivo", "Jun"]
GIFTS = ["the book", "the flowers", "the help with moving", "the dinner", "the advice"]
TOPICS = ["rain", "magnets", "the moon", "bread rising", "rainbows", "echoes", "rust"]
CATEGORIES = ["fruits", "planets", "colors", "musical instruments", "rivers", "metals"]


def thank_you(rng: random.Random) -> dict:
    name, gift = rng.choice(NAMES), rng.choice(GIFTS)
    return {
        "question": f"Write a one-sentence thank-you note to {name} for {gift}.",
        "rubric": [
            {"description": f"addresses {name} by name", "weight": 2},
            {"description": f"thanks them for {gift}", "weight": 2},
            {"description": "is a single sentence", "weight": 1},
            {"description": "is warm and polite", "weight": 1},
        ],
    }


def explain(rng: random.Random) -> dict:
    topic = rng.choice(TOPICS)
    return {
        "question": f"Explain {topic} to a seven-year-old in at most two sentences.",
        "rubric": [
            {"description": f"gives a correct basic explanation of {topic}", "weight": 3},
            {"description": "uses simple words a child knows", "weight": 2},
            {"description": "is at most two sentences long", "weight": 1},
        ],
    }


def listing(rng: random.Random) -> dict:
    category = rng.choice(CATEGORIES)
    return {
        "question": f"List exactly three {category}, separated by commas.",
        "rubric": [
            {"description": f"every item is one of the {category}", "weight": 3},
            {"description": "there are exactly three items", "weight": 2},
            {"description": "items are separated by commas, with no extra text", "weight": 1},
        ],
    }


def main() -> None:
    rng = random.Random(0)
    makers = [thank_you, explain, listing]
    rows = [makers[i % 3](rng) for i in range(60)]
    out = Path(__file__).parent / "data"
    out.mkdir(exist_ok=True)
    for name, part in (("rubric_train", rows[:48]), ("rubric_test", rows[48:])):
        with open(out / f"{name}.jsonl", "w") as fh:
            for row in part:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
