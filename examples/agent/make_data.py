"""Generate the calculator-agent tasksets and the demonstrations for a supervised warm start.

Seeded, so the shipped files are reproducible:
    python examples/agent/make_data.py
writes, under data/:

* ``train.jsonl`` and ``test.jsonl``: rows ``{"question", "answer", "expression"}``
  for ``calculator_agent_workflow`` (``expression`` is what the calculator should be
  given; the workflow itself reads only the question and the answer);
* ``demonstrations.jsonl``: one correct conversation for each of the first
  ``DEMONSTRATIONS`` train rows, as OpenAI
  ``{"messages": [...], "tools": [...]}`` with the workflow's own system prompt and
  tool schema (``reinforge.workflows.calculator_agent.demonstration``), so the
  model is warmed up on exactly the conversations it will have.

The numbers (a 4-6 digit number times or plus a 3-4 digit one) are far beyond what
a 135M model computes in its head, and no question appears in two files.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from reinforge.workflows.calculator import evaluate_expression
from reinforge.workflows.calculator_agent import demonstration

SEED = 20261125
TRAIN_ROWS = 256
TEST_ROWS = 100
#: demonstrations for the first train rows (each ~0.8 KB: the tool schema rides along)
DEMONSTRATIONS = 160
#: multiplication is the heart of the task; some additions keep the tool call general
OPERATORS = ("*", "*", "*", "+")


def problem(rng: random.Random) -> tuple[str, str, str]:
    """One (question, expression, answer)."""
    a = rng.randint(1_000, 999_999)
    b = rng.randint(100, 9_999)
    expression = f"{a} {rng.choice(OPERATORS)} {b}"
    return f"What is {expression}?", expression, str(evaluate_expression(expression))


def rows(rng: random.Random, count: int, seen: set[str]) -> list[dict[str, str]]:
    out = []
    while len(out) < count:
        question, expression, answer = problem(rng)
        if question in seen:
            continue
        seen.add(question)
        out.append({"question": question, "answer": answer, "expression": expression})
    return out


def write_jsonl(path: Path, items: list[dict]) -> None:
    with open(path, "w") as f:
        for item in items:
            f.write(json.dumps(item) + "\n")


def main(out_dir: Path) -> None:
    rng = random.Random(SEED)
    seen: set[str] = set()
    out_dir.mkdir(parents=True, exist_ok=True)
    train = rows(rng, TRAIN_ROWS, seen)
    write_jsonl(out_dir / "train.jsonl", train)
    write_jsonl(out_dir / "test.jsonl", rows(rng, TEST_ROWS, seen))
    demos = [
        demonstration(row["question"], row["expression"], call_id=f"call_{i}")
        for i, row in enumerate(train[:DEMONSTRATIONS])
    ]
    write_jsonl(out_dir / "demonstrations.jsonl", demos)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "data")
    main(parser.parse_args().out)
