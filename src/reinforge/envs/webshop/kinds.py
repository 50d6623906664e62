"""The product kinds of the shipped WebShop catalogue, and how a goal's instruction reads.

``TYPES`` lists each kind: its search query, noun, category path, attribute pool,
options (name -> values) and price range. The catalogue shipped in ``data/`` was
drawn from it (by ``tools/webshop_catalogue.py``, offline, from a seed), and the
oracle's demonstrations (``demonstration.new_goals``) draw new goals from it at run
time, worded by ``instruction_text`` exactly as the shipped goals are.
"""

from __future__ import annotations

__all__ = ["TYPES", "instruction_text"]

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


def instruction_text(noun: str, attrs: list[str], options: dict[str, str], budget: float) -> str:
    """A goal's instruction, in WebShop's words (the budget clause last)."""
    wants = [
        f"{v} {k}" if k in ("color", "scent", "flavor name") else v for k, v in options.items()
    ]
    text = f"i'm looking for {' and '.join(attrs)} {noun}"
    if wants:
        text += f" in {', '.join(wants)}"
    return f"{text}, and price lower than {budget:.2f} dollars"
