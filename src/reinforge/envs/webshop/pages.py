"""The pages of the WebShop site as text, in the real environment's ``text_rich`` form.

Buttons read ``[button] Label [button_]`` and a chosen option ``[clicked button]
Label [clicked button_]``; the agent clicks a button by its label, case-insensitive.
"""

from __future__ import annotations

from reinforge.envs.webshop.catalogue import Product

BACK = "Back to Search"
PREV = "< Prev"
NEXT = "Next >"
BUY = "Buy Now"
SEARCH = "Search"
DETAILS = ("Description", "Features", "Reviews")
PAGE_SIZE = 10


def button(label: str, clicked: bool = False) -> str:
    if clicked:
        return f"[clicked button] {label} [clicked button_]"
    return f"[button] {label} [button_]"


def _head(instruction: str) -> list[str]:
    return ["Instruction:", instruction, button(BACK)]


def search_page(instruction: str) -> str:
    return "\n".join(["WebShop", "Instruction:", instruction, button(SEARCH)])


def results_page(
    instruction: str, asins: list[str], products: dict[str, Product], page: int
) -> str:
    """Page ``page`` (from 1) of the results ``asins``."""
    lines = _head(instruction)
    lines.append(f"Page {page} (Total results: {len(asins)})")
    if page > 1:
        lines.append(button(PREV))
    if page * PAGE_SIZE < len(asins):
        lines.append(button(NEXT))
    for asin in asins[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]:
        product = products[asin]
        lines += [button(asin), product.name, f"${product.price:.2f}"]
    return "\n".join(lines)


def item_page(instruction: str, product: Product, chosen: dict[str, str]) -> str:
    lines = [*_head(instruction), button(PREV)]
    for name, values in product.options.items():
        lines.append(name + " " + "".join(button(v, chosen.get(name) == v) for v in values))
    lines += [product.name, f"Price: ${product.price:.2f}", f"Rating: {product.rating}"]
    lines += [button(d) for d in DETAILS]
    lines.append(button(BUY))
    return "\n".join(lines)


def detail_page(instruction: str, product: Product, which: str) -> str:
    if which == "Description":
        body = product.description
    elif which == "Features":
        body = "\n".join(product.features)
    else:
        body = "\n".join(product.reviews) or "No reviews yet."
    return "\n".join([*_head(instruction), button(PREV), body])


def done_page(asin: str, chosen: dict[str, str], reward: float) -> str:
    options = ", ".join(f"{k}: {v}" for k, v in chosen.items()) or "none"
    return (
        f"Thank you for shopping with us! You bought {asin} (options: {options}).\n"
        f"Your score (min 0.0, max 1.0): {reward:.2f}"
    )
