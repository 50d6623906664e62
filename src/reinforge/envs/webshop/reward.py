"""WebShop's reward for a purchase (Yao et al. 2022, "WebShop", section 3.1 and its code).

For a goal with attributes ``U_att``, options ``U_opt`` and budget ``u_price``, and
a bought product ``y`` with the options the agent chose:

    r = r_type · (|U_att ∩ Y_att| + |U_opt ∩ Y_opt| + 1[y_price ≤ u_price])
              / (|U_att| + |U_opt| + 1)

* an attribute matches when one of the product's attributes is the same phrase
  (fuzzy: ``similar`` ≥ 0.85), or, failing that, when the phrase appears in the
  product's title, description or features;
* an option matches when one of the chosen option values is similar (≥ 0.85);
* ``r_type`` says whether the right kind of product was bought: 1, or 0.5 when
  neither the search query it was listed under, nor two levels of its category,
  nor more than 20% of the goal title's content words match; 0.1 when under 10%
  of those words match, 0 when none do.

Two stand-ins for the original's dependencies: the goal title's nouns (spaCy's
part-of-speech tagger) are its words that are not stop words or numbers, and
``thefuzz``'s token-set ratio is ``similar`` below (1 when one phrase's words
contain the other's, else difflib's ratio of the sorted words).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from reinforge.envs.webshop.catalogue import Product

MATCH = 0.85
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "in",
        "into",
        "is",
        "it",
        "of",
        "on",
        "or",
        "the",
        "to",
        "with",
        "without",
        "pack",
        "count",
        "ounce",
        "oz",
        "fl",
        "inch",
        "pound",
        "x",
        "s",
    ]
)


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def similar(a: str, b: str) -> float:
    """1.0 when the words of one phrase contain the other's, else difflib's ratio of the
    phrases' sorted words (a token-set similarity in [0, 1])."""
    wa, wb = set(words(a)), set(words(b))
    if not wa or not wb:
        return 0.0
    if wa <= wb or wb <= wa:
        return 1.0
    return difflib.SequenceMatcher(None, " ".join(sorted(wa)), " ".join(sorted(wb))).ratio()


def content_words(title: str) -> set[str]:
    """The title's words that name things: neither stop words nor numbers."""
    return {w for w in words(title) if w not in STOP_WORDS and not w[0].isdigit()}


@dataclass(frozen=True)
class RewardParts:
    """The reward and what went into it (reported as metrics)."""

    reward: float
    r_type: float
    attribute_matches: int
    option_matches: int
    price_ok: bool
    title_score: float
    query_match: bool
    category_match: bool

    def metrics(self) -> dict[str, float]:
        return {
            "r_type": self.r_type,
            "r_att_matches": float(self.attribute_matches),
            "r_option_matches": float(self.option_matches),
            "r_price": float(self.price_ok),
            "title_score": self.title_score,
        }


def type_reward(product: Product, goal: dict[str, Any]) -> tuple[float, float, bool, bool]:
    """``(r_type, title_score, query_match, category_match)``."""
    query_match = product.query == goal.get("query")
    bought = {c.strip() for c in product.product_category.split("›")}
    wanted = {c.strip() for c in str(goal.get("product_category", "")).split("›")}
    category_match = len(bought & wanted - {""}) >= 2
    desired = content_words(str(goal.get("name", "")))
    title_score = 0.2 if not desired else len(desired & content_words(product.name)) / len(desired)
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return r_type, title_score, query_match, category_match


def attribute_matches(product: Product, attributes: list[str]) -> int:
    text = " ".join([product.name, product.description, *product.features]).lower()
    count = 0
    for attr in attributes:
        if any(similar(attr, have) >= MATCH for have in product.attributes) or attr.lower() in text:
            count += 1
    return count


def option_matches(chosen: list[str], wanted: list[str]) -> int:
    return sum(any(similar(w, c) >= MATCH for c in chosen) for w in wanted)


def purchase_reward(product: Product, options: dict[str, str], goal: dict[str, Any]) -> RewardParts:
    """The reward of buying ``product`` with ``options`` (option name → value) for ``goal``."""
    attrs = list(goal.get("attributes") or [])
    wanted = [str(v) for v in (goal.get("goal_options") or {}).values()]
    r_type, title_score, query_match, category_match = type_reward(product, goal)
    n_att = attribute_matches(product, attrs)
    n_opt = option_matches([str(v) for v in options.values()], wanted)
    price_ok = product.price <= float(goal["price_upper"])
    share = (n_att + n_opt + int(price_ok)) / (len(attrs) + len(wanted) + 1)
    return RewardParts(
        reward=share * r_type,
        r_type=r_type,
        attribute_matches=n_att,
        option_matches=n_opt,
        price_ok=price_ok,
        title_score=title_score,
        query_match=query_match,
        category_match=category_match,
    )
