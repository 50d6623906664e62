"""WebShop's purchase reward on hand-computed examples (Yao et al. 2022, section 3.1)."""

from __future__ import annotations

import pytest

from reinforge.envs.webshop import Product, purchase_reward
from reinforge.envs.webshop.reward import similar, type_reward

PRODUCT = Product(
    asin="B000000001",
    name="Acme Aluminum Free Deodorant - bright citrus",
    query="deodorant",
    product_category="Beauty › Personal Care › Deodorants",
    price=12.99,
    attributes=["aluminum free", "long lasting"],
    options={"scent": ["bright citrus", "unscented"], "size": ["2 ounce", "3 ounce"]},
    description="Gentle on sensitive skin.",
)
GOAL = {
    "asin": "B000000009",
    "name": "Zeta Deodorant Stick",
    "query": "deodorant",
    "product_category": "Beauty › Personal Care › Deodorants",
    "attributes": ["aluminum free", "sensitive skin", "travel size"],
    "goal_options": {"scent": "bright citrus", "size": "3 ounce"},
    "price_upper": 10.0,
    "instruction_text": "i need an aluminum free deodorant",
}


def test_share_of_matches_times_type() -> None:
    parts = purchase_reward(PRODUCT, {"scent": "bright citrus"}, GOAL)
    # attributes: "aluminum free" is one of the product's, "sensitive skin" is in its
    # description, "travel size" nowhere -> 2 of 3; options: the scent, not the size
    # -> 1 of 2; price 12.99 over the 10.00 budget -> 0. (2 + 1 + 0) / (3 + 2 + 1)
    assert (parts.attribute_matches, parts.option_matches, parts.price_ok) == (2, 1, False)
    # type: same query; goal title words {zeta, deodorant, stick}, 1 of 3 bought -> r_type 1
    assert parts.title_score == pytest.approx(1 / 3)
    assert parts.r_type == 1.0
    assert parts.reward == pytest.approx(0.5)


def test_everything_matched_is_one() -> None:
    goal = {**GOAL, "attributes": ["long lasting"], "price_upper": 20.0, "name": PRODUCT.name}
    parts = purchase_reward(PRODUCT, {"scent": "bright citrus", "size": "3 ounce"}, goal)
    assert parts.reward == 1.0


@pytest.mark.parametrize(
    ("goal_name", "query", "category", "r_type"),
    [
        # same title words: right type whatever the query and category say
        ("Acme Deodorant", "shampoo", "X › Y › Z", 1.0),
        # 1 of 5 title words (0.2, not above it), other query, one category level: 0.5
        ("Zeta deodorant stick travel bottle", "shampoo", "Beauty › Y › Z", 0.5),
        # 1 of 11 title words: under 0.1 -> 0.1
        ("deodorant a1 b1 c1 d1 e1 f1 g1 h1 i1 j1 k1", "deodorant", "X", 0.1),
        # nothing in common: 0
        ("Velvet pillow cover", "deodorant", "Beauty › Personal Care › Deodorants", 0.0),
    ],
)
def test_type_factor(goal_name: str, query: str, category: str, r_type: float) -> None:
    goal = {**GOAL, "name": goal_name, "query": query, "product_category": category}
    assert type_reward(PRODUCT, goal)[0] == r_type


def test_a_wrong_kind_of_product_scores_zero_however_well_it_matches() -> None:
    goal = {**GOAL, "name": "Velvet pillow cover"}
    assert purchase_reward(PRODUCT, {"scent": "bright citrus"}, goal).reward == 0.0


def test_similar_is_a_token_set_match() -> None:
    assert similar("3 ounce", "3 ounce (pack of 1)") == 1.0
    assert similar("Bright Citrus", "bright citrus") == 1.0
    assert similar("sensitive skin", "dry skin") < 0.85
    assert similar("", "anything") == 0.0
