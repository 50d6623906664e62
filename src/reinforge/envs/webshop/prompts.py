"""What the WebShop agent is told, and how its replies become actions (Trinity-RFT's format).

The agent thinks inside ``<think>...</think>`` and acts inside
``<action>...</action>`` with ``search[query]`` or ``click[button label]``.
``validate_action`` checks an action against the page before it reaches the
environment and explains what was wrong, listing the buttons it can click.
"""

from __future__ import annotations

from typing import Any

from reinforge.envs.webshop.env import split_action, valid_action_texts

SYSTEM_PROMPT = """You are shopping in a text-based web store. Read the Instruction you are \
given and buy the product that matches it best, step by step.

## Actions
An action is written `name[argument]`. There are two:
- search: when the page shows `[button] Search [button_]`, type a query with \
<action>search[your query]</action>.
- click: press a button `[button] label [button_]` shown on the current page with \
<action>click[label]</action>, for example a product id, an option such as a size or a \
colour, `Next >`, `< Prev`, `Back to Search` or `Buy Now`.

Examples:
- <action>search[white running shoes]</action>
- <action>click[Buy Now]</action>

## Rules
At every step, first think inside <think> </think>, then give exactly one action inside \
<action> </action>. Choose the options the Instruction asks for before you click Buy Now, \
and stay within the budget. Buy the item within {max_steps} steps. Never ask the user \
anything: finish the purchase by yourself."""

NO_ACTION = (
    "Invalid action. Wrap your action in <action> </action> tags and write it as "
    "search[query] or click[button]."
)
EMPTY_QUERY = "Invalid action: type the query you want to search for inside the square brackets."
NO_SEARCH_BAR = (
    "You cannot search on this page: there is no search bar. Click Back to Search first."
)


def system_prompt(max_steps: int) -> str:
    return SYSTEM_PROMPT.format(max_steps=max_steps)


def parse_action(reply: str) -> str:
    """The text inside the reply's first ``<action>...</action>``; "" when there is none."""
    start = reply.find("<action>")
    if start < 0:
        return ""
    end = reply.find("</action>", start)
    if end < 0:
        return ""
    return reply[start + len("<action>") : end].strip()


def validate_action(action: str, available: dict[str, Any]) -> tuple[bool, str]:
    """Whether ``action`` can be taken on the page described by ``available``
    (``get_available_actions()``), and if not, the message the agent gets instead."""
    name, arg = split_action(action)
    clickables = [str(c).lower() for c in available.get("clickables", [])]
    if name == "search":
        if not arg:
            return False, EMPTY_QUERY
        if not available.get("has_search_bar"):
            return False, NO_SEARCH_BAR
        return True, ""
    if name == "click":
        if arg is not None and arg.lower() in clickables:
            return True, ""
        return False, (
            "Invalid action: that button is not on the current page. Buttons you can click "
            f"now: {clickables}. Valid actions: {', '.join(valid_action_texts(available))}"
        )
    return False, NO_ACTION


def observation_message(observation: str, available: dict[str, Any] | None) -> str:
    """The user message for an observation: Trinity-RFT's ``Observation: ...``, followed
    by the valid actions when ``available`` is given."""
    text = "Observation:\n" + observation
    if available is not None:
        text += "\n\nValid actions: " + ", ".join(valid_action_texts(available))
    return text
