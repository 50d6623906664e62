"""Generate the tool-calling taskset: a request, three tools on offer, the call that serves it.

Seeded, so the shipped files are reproducible:
    python examples/tool_call/make_data.py
writes data/train.jsonl (120 rows) and data/test.jsonl (40 rows); no request
appears in both.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

TOOLS = {
    "get_weather": {
        "description": "Current weather in a city",
        "parameters": {"city": {"type": "string"}},
    },
    "add": {
        "description": "Add two integers",
        "parameters": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    },
    "convert_currency": {
        "description": "Convert an amount of money from one currency to another",
        "parameters": {
            "amount": {"type": "number"},
            "from_currency": {"type": "string"},
            "to_currency": {"type": "string"},
        },
    },
    "set_alarm": {
        "description": "Set an alarm at a time of day (HH:MM, 24-hour clock)",
        "parameters": {"time": {"type": "string"}},
    },
    "translate": {
        "description": "Translate a word into a language",
        "parameters": {"word": {"type": "string"}, "language": {"type": "string"}},
    },
}

CITIES = [
    "Paris",
    "Tokyo",
    "Lima",
    "Oslo",
    "Cairo",
    "Sydney",
    "Toronto",
    "Madrid",
    "Seoul",
    "Nairobi",
]
CURRENCIES = ["USD", "EUR", "JPY", "GBP", "CHF"]
WORDS = ["apple", "house", "river", "friend", "book", "tree", "sun", "bread"]
LANGUAGES = ["French", "Spanish", "German", "Italian"]


def schema(name: str) -> dict:
    spec = TOOLS[name]
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": spec["description"],
            "parameters": {
                "type": "object",
                "properties": spec["parameters"],
                "required": list(spec["parameters"]),
            },
        },
    }


def request(rng: random.Random) -> tuple[str, str, dict]:
    name = rng.choice(sorted(TOOLS))
    if name == "get_weather":
        city = rng.choice(CITIES)
        return (
            name,
            rng.choice([f"What's the weather in {city}?", f"Is it raining in {city} right now?"]),
            {"city": city},
        )
    if name == "add":
        a, b = rng.randint(1, 99), rng.randint(1, 99)
        return name, rng.choice([f"What is {a} plus {b}?", f"Add {a} and {b}."]), {"a": a, "b": b}
    if name == "convert_currency":
        amount = rng.choice([5, 10, 20, 50, 100, 250])
        src, dst = rng.sample(CURRENCIES, 2)
        return (
            name,
            f"How much is {amount} {src} in {dst}?",
            {"amount": amount, "from_currency": src, "to_currency": dst},
        )
    if name == "set_alarm":
        time = f"{rng.randint(5, 11):02d}:{rng.choice(['00', '15', '30', '45'])}"
        return (
            name,
            rng.choice([f"Wake me up at {time}.", f"Set an alarm for {time}."]),
            {"time": time},
        )
    word, lang = rng.choice(WORDS), rng.choice(LANGUAGES)
    return name, f"How do you say '{word}' in {lang}?", {"word": word, "language": lang}


def rows(rng: random.Random, count: int, seen: set[str]) -> list[dict]:
    out = []
    while len(out) < count:
        name, question, args = request(rng)
        if question in seen:
            continue
        seen.add(question)
        others = rng.sample([t for t in sorted(TOOLS) if t != name], 2)
        offered = [name, *others]
        rng.shuffle(offered)
        out.append(
            {
                "question": question,
                "tools": [schema(t) for t in offered],
                "answer": {"name": name, "arguments": args},
            }
        )
    return out


def main() -> None:
    rng = random.Random(20261121)
    seen: set[str] = set()
    data = Path(__file__).parent / "data"
    data.mkdir(exist_ok=True)
    for split, count in (("train", 120), ("test", 40)):
        with open(data / f"{split}.jsonl", "w") as f:
            for row in rows(rng, count, seen):
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
