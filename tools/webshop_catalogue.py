"""Generate the shipped WebShop catalogue: products with attributes, options and prices,
and shopping goals with instructions, from a seed (so the files can be rebuilt exactly).

    python tools/webshop_catalogue.py [--out DIR] [--seed N]

writes ``products.jsonl`` and ``goals.jsonl`` (default: the data folder of the
installed ``reinforge.envs.webshop``). An offline step, run when the catalogue
changes: the environment only reads the files; the product kinds it draws from,
which the oracle's demonstrations also use at run time, are
``reinforge.envs.webshop.kinds``.

The real WebShop scraped 1.18M Amazon products and had crowd workers write 12k
instructions; this is a small stand-in with the same fields, so the environment,
its search and the paper's reward work unchanged on it:

* a product: ``asin``, ``name`` (title), ``query`` (the search it was scraped
  under, here its product type), ``product_category`` (``a › b › c``),
  ``attributes`` (short phrases such as "sensitive skin"), ``options`` (option
  name → values), ``price``, ``description``, ``features`` (bullets), ``rating``,
  ``reviews``.
* a goal: ``goal_id``, ``asin`` (the product it was written from), ``name``,
  ``query``, ``product_category``, ``attributes`` (a subset of the product's),
  ``goal_options`` (option name → the wanted value), ``price_upper`` (the budget)
  and ``instruction_text``.

Every product type has 25 products drawn from one attribute pool and one set of
options, so a search brings back near misses (some attributes, the wrong scent)
next to the product a goal was written from, and the reward's partial credit matters.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import string
from pathlib import Path
from typing import Any

import reinforge.envs.webshop
from reinforge.envs.webshop.kinds import TYPES, instruction_text

#: the package's shipped data folder
DATA = Path(reinforge.envs.webshop.__file__).parent / "data"

PRODUCTS_PER_TYPE = 25
GOALS_PER_PRODUCT = 1


BRANDS = [
    "Earth Mama",
    "Northwind",
    "Bluebird",
    "Tidewater",
    "Pinecrest",
    "Sunhaven",
    "Oakline",
    "Maple & Co",
    "Riverstone",
    "Goldleaf",
    "Brightside",
    "Everpure",
    "Hollowbrook",
    "Kestrel",
    "Lumen",
    "Meadowlark",
    "Ironwood",
    "Copperfield",
    "Silverfern",
    "Wildroot",
]

REVIEWS = [
    "Works exactly as described.",
    "Good value for the price.",
    "Arrived quickly, would buy again.",
    "Not what I expected, but fine.",
    "My second order of this one.",
]


def _asin(rng: random.Random, taken: set[str]) -> str:
    while True:
        asin = "B0" + "".join(rng.choices(string.ascii_uppercase + string.digits, k=8))
        if asin not in taken:
            taken.add(asin)
            return asin


def _title(brand: str, noun: str, attrs: list[str], extra: str) -> str:
    lead = " ".join(a.title() for a in attrs[:2])
    rest = ", ".join(attrs[2:])
    title = f"{brand} {lead} {noun.title()}"
    if rest:
        title += f", {rest.capitalize()}"
    return f"{title} - {extra}"


def _price(rng: random.Random, low: int, high: int) -> float:
    return round(rng.randint(low, high - 1) + 0.99, 2)


def make_products(rng: random.Random) -> list[dict[str, Any]]:
    """``PRODUCTS_PER_TYPE`` products of every type in ``TYPES``."""
    products = []
    taken: set[str] = set()
    for query, noun, category, pool, options, (low, high) in TYPES:
        for _ in range(PRODUCTS_PER_TYPE):
            brand = rng.choice(BRANDS)
            attrs = rng.sample(pool, rng.randint(2, 4))
            opts = {
                name: sorted(rng.sample(values, rng.randint(2, min(4, len(values)))))
                for name, values in options.items()
            }
            extra = " | ".join(v[0] for v in opts.values())
            features = [f"{a.capitalize()}: made for people who want {a}." for a in attrs]
            products.append(
                {
                    "asin": _asin(rng, taken),
                    "name": _title(brand, noun, attrs, extra),
                    "query": query,
                    "product_category": " › ".join(category),
                    "attributes": attrs,
                    "options": opts,
                    "price": _price(rng, low, high),
                    "description": (
                        f"The {brand} {noun} is {', '.join(attrs[:-1])} and {attrs[-1]}. "
                        f"Available in {len(next(iter(opts.values())))} choices."
                    ),
                    "features": features,
                    "rating": rng.choice(["N.A.", "3.9", "4.2", "4.5", "4.8"]),
                    "reviews": rng.sample(REVIEWS, 2),
                }
            )
    return products


def make_goals(rng: random.Random, products: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``GOALS_PER_PRODUCT`` goals per product, shuffled, numbered from 0."""
    nouns = {t[0]: t[1] for t in TYPES}
    goals = []
    for product in products:
        for _ in range(GOALS_PER_PRODUCT):
            attrs = rng.sample(
                product["attributes"], rng.randint(1, min(2, len(product["attributes"])))
            )
            names = rng.sample(sorted(product["options"]), rng.randint(1, len(product["options"])))
            options = {n: rng.choice(product["options"][n]) for n in names}
            budget = float(math.ceil(product["price"] * rng.uniform(1.1, 1.8) / 10) * 10)
            goals.append(
                {
                    "asin": product["asin"],
                    "name": product["name"],
                    "query": product["query"],
                    "product_category": product["product_category"],
                    "attributes": attrs,
                    "goal_options": options,
                    "price_upper": budget,
                    "instruction_text": instruction_text(
                        nouns[product["query"]], attrs, options, budget
                    ),
                }
            )
    rng.shuffle(goals)
    for i, goal in enumerate(goals):
        goal["goal_id"] = i
    return goals


def generate(seed: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The products and goals for ``seed`` (the shipped files are ``seed=0``)."""
    rng = random.Random(seed)
    products = make_products(rng)
    return products, make_goals(rng, products)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DATA)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    products, goals = generate(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "products.jsonl", products)
    write_jsonl(args.out / "goals.jsonl", goals)
    print(f"wrote {len(products)} products and {len(goals)} goals to {args.out}")


if __name__ == "__main__":
    main()
