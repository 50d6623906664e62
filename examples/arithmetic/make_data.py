"""Generate the arithmetic taskset shipped in ``data/`` (deterministic for a seed).

    python examples/arithmetic/make_data.py --seed 0 --train 400 --test 274

Each row is ``{"question": "What is 13 + 7?", "answer": "20"}``: addition and
subtraction of numbers up to ``--max-operand`` (20), multiplication of 2..9.
Small numbers on purpose: SmolLM2-135M gets about a fifth of these right when
sampling at temperature 1 and nearly half greedily, so RL has a signal to sharpen
within minutes on a CPU. Train and test never share a question; with the default
``--max-operand`` there are 674 distinct questions, and the test split takes every
one the training split does not (274, enough for a held-out score whose sampling
noise is small next to run-to-run differences).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path


def make_question(rng: random.Random, max_operand: int) -> tuple[str, str]:
    op = rng.choice("+-*")
    if op == "*":
        a, b = rng.randint(2, 9), rng.randint(2, 9)
    else:
        a, b = rng.randint(1, max_operand), rng.randint(1, max_operand)
        if op == "-" and b > a:
            a, b = b, a
    value = a + b if op == "+" else a - b if op == "-" else a * b
    return f"What is {a} {op} {b}?", str(value)


def generate(
    seed: int, n_train: int, n_test: int, max_operand: int
) -> tuple[list[dict], list[dict]]:
    rng = random.Random(seed)
    # a + b ordered pairs, a - b with a >= b, and the 8 x 8 products
    possible = max_operand * max_operand + max_operand * (max_operand + 1) // 2 + 64
    if n_train + n_test > possible:
        raise ValueError(f"only {possible} distinct questions exist with max_operand={max_operand}")
    seen: set[str] = set()
    rows: list[dict] = []
    while len(rows) < n_train + n_test:
        question, answer = make_question(rng, max_operand)
        if question in seen:
            continue
        seen.add(question)
        rows.append({"question": question, "answer": answer})
    return rows[:n_train], rows[n_train:]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train", type=int, default=400)
    parser.add_argument("--test", type=int, default=274)
    parser.add_argument("--max-operand", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "data")
    args = parser.parse_args()
    train, test = generate(args.seed, args.train, args.test, args.max_operand)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train", train), ("test", test)):
        with open(args.out / f"{name}.jsonl", "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row) + "\n")
        print(f"wrote {len(rows)} rows to {args.out / f'{name}.jsonl'}")


if __name__ == "__main__":
    main()
