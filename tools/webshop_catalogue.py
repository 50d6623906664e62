"""Generate the shipped WebShop catalogue: products with attributes, options and prices,
and shopping goals with instructions, from a seed (so the files can be rebuilt exactly).

    python -m reinforge.envs.webshop.generate [--out DIR] [--seed N]

writes ``products.jsonl`` and ``goals.jsonl`` (default: the package's ``data/``).

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

PRODUCTS_PER_TYPE = 25
GOALS_PER_PRODUCT = 1

# (query, noun, category path, attribute pool, options, price range)
TYPES: list[tuple[str, str, list[str], list[str], dict[str, list[str]], tuple[int, int]]] = [
    (
        "deodorant",
        "deodorant",
        ["Beauty & Personal Care", "Personal Care", "Deodorants & Antiperspirants"],
        [
            "aluminum free",
            "sensitive skin",
            "long lasting",
            "natural ingredients",
            "paraben free",
            "cruelty free",
            "travel size",
        ],
        {
            "scent": [
                "bright citrus",
                "calming lavender",
                "ginger fresh",
                "unscented",
                "cedar sage",
            ],
            "size": ["2.7 ounce", "3 ounce (pack of 1)", "3 ounce (pack of 2)"],
        },
        (6, 30),
    ),
    (
        "shampoo",
        "shampoo",
        ["Beauty & Personal Care", "Hair Care", "Shampoo & Conditioner"],
        [
            "sulfate free",
            "dry hair",
            "color treated",
            "natural ingredients",
            "hair growth",
            "tea tree",
            "dandruff",
        ],
        {
            "size": ["8 fl oz", "16 fl oz", "32 fl oz"],
            "scent": ["coconut", "mint", "rosemary", "fragrance free"],
        },
        (7, 40),
    ),
    (
        "face moisturizer",
        "moisturizer",
        ["Beauty & Personal Care", "Skin Care", "Face Moisturizers"],
        [
            "hyaluronic acid",
            "oil free",
            "sensitive skin",
            "anti aging",
            "spf 30",
            "non comedogenic",
            "fine lines",
        ],
        {
            "size": ["1.7 ounce", "2.5 ounce", "4 ounce"],
            "type": ["day cream", "night cream", "gel"],
        },
        (10, 60),
    ),
    (
        "men's t-shirt",
        "t-shirt",
        ["Clothing, Shoes & Jewelry", "Men", "Clothing", "Shirts", "T-Shirts"],
        [
            "machine wash",
            "cotton",
            "short sleeve",
            "regular fit",
            "moisture wicking",
            "crew neck",
            "quick drying",
        ],
        {
            "color": ["black", "navy blue", "heather grey", "white", "olive green"],
            "size": ["small", "medium", "large", "x-large", "xx-large"],
        },
        (9, 35),
    ),
    (
        "women's running shoes",
        "running shoes",
        ["Clothing, Shoes & Jewelry", "Women", "Shoes", "Athletic", "Running"],
        [
            "non slip",
            "rubber sole",
            "lightweight",
            "memory foam",
            "breathable mesh",
            "arch support",
            "wide width",
        ],
        {
            "color": ["black white", "pink", "grey", "blue", "purple"],
            "size": ["6", "7", "7.5", "8", "9", "10"],
        },
        (30, 120),
    ),
    (
        "ground coffee",
        "ground coffee",
        ["Grocery & Gourmet Food", "Beverages", "Coffee, Tea & Cocoa", "Coffee"],
        [
            "dark roast",
            "medium roast",
            "organic",
            "fair trade",
            "decaf",
            "low acid",
            "single origin",
        ],
        {
            "flavor name": ["original", "hazelnut", "vanilla", "mocha"],
            "size": ["12 ounce (pack of 1)", "12 ounce (pack of 3)", "2 pound"],
        },
        (8, 45),
    ),
    (
        "protein bars",
        "protein bars",
        ["Grocery & Gourmet Food", "Snack Foods", "Bars", "Protein Bars"],
        [
            "gluten free",
            "low sugar",
            "high protein",
            "keto friendly",
            "plant based",
            "non gmo",
            "dairy free",
        ],
        {
            "flavor name": ["chocolate chip", "peanut butter", "cookies and cream", "lemon"],
            "size": ["12 count", "15 count", "24 count"],
        },
        (12, 50),
    ),
    (
        "phone case",
        "phone case",
        ["Cell Phones & Accessories", "Cases, Holsters & Sleeves", "Basic Cases"],
        [
            "shockproof",
            "wireless charging",
            "slim fit",
            "screen protector",
            "kickstand",
            "military grade",
            "clear",
        ],
        {
            "color": ["black", "clear", "blue", "red", "purple"],
            "size": ["iphone 13", "iphone 14", "iphone 15", "galaxy s23"],
        },
        (6, 30),
    ),
    (
        "wireless headphones",
        "headphones",
        ["Electronics", "Headphones, Earbuds & Accessories", "Headphones", "Over-Ear Headphones"],
        [
            "noise cancelling",
            "bluetooth",
            "long battery life",
            "over ear",
            "built in microphone",
            "foldable",
            "fast charging",
        ],
        {"color": ["black", "white", "silver", "blue"]},
        (25, 200),
    ),
    (
        "throw pillow covers",
        "pillow covers",
        ["Home & Kitchen", "Home Décor Products", "Decorative Pillows, Inserts & Covers"],
        [
            "machine washable",
            "double sided",
            "hidden zipper",
            "velvet",
            "living room",
            "linen",
            "farmhouse",
        ],
        {
            "color": ["beige", "dark grey", "emerald green", "mustard yellow", "navy"],
            "size": ["18 x 18 inch", "20 x 20 inch", "12 x 20 inch"],
        },
        (8, 35),
    ),
    (
        "dry dog food",
        "dog food",
        ["Pet Supplies", "Dogs", "Food", "Dry"],
        [
            "grain free",
            "high protein",
            "small breed",
            "real meat",
            "no artificial preservatives",
            "puppy",
            "senior dog",
        ],
        {
            "flavor name": ["chicken", "salmon", "lamb", "beef"],
            "size": ["4 pound", "15 pound", "30 pound"],
        },
        (12, 80),
    ),
    (
        "scented candle",
        "candle",
        ["Home & Kitchen", "Home Décor Products", "Candles & Holders", "Candles"],
        [
            "soy wax",
            "long lasting",
            "natural ingredients",
            "gift set",
            "lead free wick",
            "aromatherapy",
            "cotton wick",
        ],
        {
            "scent": ["vanilla", "eucalyptus", "sandalwood", "fresh linen", "pumpkin spice"],
            "size": ["8 ounce", "14 ounce", "3 pack"],
        },
        (9, 45),
    ),
]

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


def _instruction(noun: str, attrs: list[str], options: dict[str, str], budget: float) -> str:
    wants = [
        f"{v} {k}" if k in ("color", "scent", "flavor name") else v for k, v in options.items()
    ]
    text = f"i'm looking for {' and '.join(attrs)} {noun}"
    if wants:
        text += f" in {', '.join(wants)}"
    return f"{text}, and price lower than {budget:.2f} dollars"


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
                    "instruction_text": _instruction(
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
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "data")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    products, goals = generate(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "products.jsonl", products)
    write_jsonl(args.out / "goals.jsonl", goals)
    print(f"wrote {len(products)} products and {len(goals)} goals to {args.out}")


if __name__ == "__main__":
    main()
