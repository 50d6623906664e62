"""An oracle shopper's WebShop conversations, for supervised warm starts.

The oracle knows the goal's ground truth (the product it was written from and the
options it asks for). It searches with the instruction's own words (the budget
clause dropped), turns result pages until the goal's product is listed, opens it,
clicks each option the goal asks for and buys: on the shipped catalogue that
purchase earns WebShop's full reward, 1.0.

``demonstration(settings)`` plays the oracle against the real environment and
writes the conversation ``webshop_workflow`` would have with it (the same system
prompt, observations and valid actions, the ``<think>``/``<action>`` reply
format), so SFT on it teaches the workflow's own format. ``new_goals`` draws goals
that no shipped goal is (other attributes, options or budget for the products of
given goals), so demonstrations need not share a goal with a taskset.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable
from typing import Any

import reinforge.envs.webshop.pages as pages
from reinforge.envs.webshop.catalogue import Catalogue
from reinforge.envs.webshop.env import make_env
from reinforge.envs.webshop.kinds import TYPES, instruction_text
from reinforge.envs.webshop.prompts import observation_message, system_prompt
from reinforge.envs.webshop.settings import WebShopSettings

_BUDGET = re.compile(r",?\s*and price lower than [0-9.]+ dollars\s*$")
_LEAD = re.compile(r"^\s*i'?m looking for\s+", re.IGNORECASE)


def search_query(instruction: str) -> str:
    """The oracle's query: the instruction without its lead-in and budget clause."""
    return _LEAD.sub("", _BUDGET.sub("", instruction)).strip()


def reply(thought: str, action: str) -> str:
    """An assistant turn in the workflow's format."""
    return f"<think>{thought}</think>\n<action>{action}</action>"


def oracle_step(env: Any, goal: dict[str, Any], chosen: set[str]) -> tuple[str, str]:
    """The oracle's next ``(thought, action)`` on the env's current page.

    ``chosen`` is the set of option values already clicked (updated by the caller)."""
    available = env.get_available_actions()
    clickables = [str(c).lower() for c in available.get("clickables", [])]
    asin = str(goal["asin"]).upper()
    if available.get("has_search_bar"):
        return "I search for the product the instruction describes.", (
            f"search[{search_query(str(goal['instruction_text']))}]"
        )
    if pages.BUY.lower() in clickables:  # the item page
        for value in (goal.get("goal_options") or {}).values():
            if str(value).lower() not in chosen:
                return f"The instruction asks for {value}.", f"click[{value}]"
        return "The options match the instruction, so I buy it.", f"click[{pages.BUY}]"
    if asin.lower() in clickables:
        return f"{asin} matches the instruction.", f"click[{asin}]"
    if pages.NEXT.lower() in clickables:
        return "The product is not on this page.", f"click[{pages.NEXT}]"
    raise RuntimeError(f"the oracle is lost on this page for goal {goal.get('goal_id')!r}")


def demonstration(settings: WebShopSettings) -> dict[str, Any]:
    """The oracle's conversation for the goal of ``settings`` as ``webshop_workflow``
    has it: ``{"messages": [...], "reward": r}`` ending with the reply that clicks
    Buy Now; ``reward`` is the environment's reward for the purchase. Raises when the
    oracle cannot buy within ``settings.max_env_steps`` actions."""
    env = make_env(settings.env, **dict(settings.env_args))
    try:
        env.reset(session=settings.session)
        goal = getattr(env, "goal", None)
        if not isinstance(goal, dict):
            raise ValueError(f"env {settings.env!r} does not expose its goal: no oracle for it")
        steps = int(settings.max_env_steps)
        prompt = settings.system_prompt
        prompt = prompt.replace("{max_steps}", str(steps)) if prompt else system_prompt(steps)
        show = settings.show_available_actions

        def observe(observation: str) -> dict[str, str]:
            available = env.get_available_actions() if show else None
            return {"role": "user", "content": observation_message(observation, available)}

        messages = [{"role": "system", "content": prompt}, observe(env.observation)]
        chosen: set[str] = set()
        for _ in range(steps):
            thought, action = oracle_step(env, goal, chosen)
            messages.append({"role": "assistant", "content": reply(thought, action)})
            observation, reward, done, info = env.step(action)
            if not info.get("valid", True):
                raise RuntimeError(f"the oracle's {action!r} was invalid: {observation}")
            if action.startswith("click[") and action != f"click[{pages.BUY}]":
                chosen.add(action[len("click[") : -1].lower())
            if done:
                return {"messages": messages, "reward": float(reward)}
            messages.append(observe(observation))
        raise RuntimeError(
            f"the oracle needs more than max_env_steps={steps} actions for goal "
            f"{goal.get('goal_id')!r}"
        )
    finally:
        env.close()


def steps_needed(catalogue: Catalogue, goal: dict[str, Any]) -> int:
    """How many actions the oracle takes for ``goal``: search, the result pages it
    turns, open, one per option, buy."""
    results = catalogue.search(search_query(str(goal["instruction_text"])))
    asin = str(goal["asin"]).upper()
    turns = results.index(asin) // pages.PAGE_SIZE if asin in results else 0
    return 3 + turns + len(goal.get("goal_options") or {})


def _key(goal: dict[str, Any]) -> tuple[Any, ...]:
    options = tuple(sorted((goal.get("goal_options") or {}).items()))
    return (goal["asin"], tuple(sorted(goal.get("attributes") or [])), options)


def new_goals(
    catalogue: Catalogue, asins: Iterable[str], count: int, seed: int = 0
) -> list[dict[str, Any]]:
    """``count`` goals for the products ``asins`` (in turn), drawn as ``generate.py``
    draws them (one or two of the product's attributes, some of its options, a budget
    above its price), none the same (product, attributes, options) or the same
    instruction as a catalogue goal or another drawn one. Their ``goal_id`` is None: they are goal objects, not numbers."""
    rng = random.Random(seed)
    nouns = {t[0]: t[1] for t in TYPES}
    taken = {_key(g) for g in catalogue.goals}
    texts = {str(g["instruction_text"]) for g in catalogue.goals}
    asins = list(asins)
    out: list[dict[str, Any]] = []
    tries = 0
    while len(out) < count:
        tries += 1
        if tries > 100 * count + 1000:
            raise RuntimeError(f"could only draw {len(out)} new goals of {count}")
        product = catalogue.product(asins[tries % len(asins)])
        attrs = rng.sample(product.attributes, rng.randint(1, min(2, len(product.attributes))))
        names = rng.sample(sorted(product.options), rng.randint(1, len(product.options)))
        options = {n: rng.choice(product.options[n]) for n in names}
        budget = float(math.ceil(product.price * rng.uniform(1.1, 1.8) / 10) * 10)
        goal = {
            "asin": product.asin,
            "name": product.name,
            "query": product.query,
            "product_category": product.product_category,
            "attributes": attrs,
            "goal_options": options,
            "price_upper": budget,
            "instruction_text": instruction_text(
                nouns.get(product.query, product.query), attrs, options, budget
            ),
            "goal_id": None,
        }
        if _key(goal) in taken or goal["instruction_text"] in texts:
            continue
        taken.add(_key(goal))
        texts.add(goal["instruction_text"])
        out.append(goal)
    return out
