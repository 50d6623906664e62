"""The WebShop environment: its interface, and the site served from the shipped catalogue.

A workflow talks to any WebShop through the interface of the real one,
``web_agent_site``'s ``WebAgentTextEnv`` (the gym environment Trinity-RFT uses):

* ``reset(session=...)``: start a shopping session for a goal (its number, or a goal
  object); ``observation`` is then the start page;
* ``get_available_actions()``: ``{"has_search_bar": bool, "clickables": [labels]}``,
  labels lower-cased;
* ``step(action)``: ``search[query]`` or ``click[label]`` →
  ``(observation, reward, done, info)``; ``click[Buy Now]`` ends the session with
  the purchase's reward (``reward.purchase_reward``), every other step earns 0;
* ``close()``.

``CatalogueWebShopEnv`` is that site over a ``Catalogue``: a search page, result
pages of ten (BM25 ranked, at most 50 results), item pages with option buttons,
description / features / reviews pages, and the purchase. An action it cannot
take leaves the page as it was and answers with the actions it can take.
``make_env`` builds the environment a workflow asks for (see its docstring).
"""

from __future__ import annotations

import importlib
import re
from typing import Any, Protocol

import reinforge.envs.webshop.pages as pages
from reinforge.envs.webshop.catalogue import Catalogue, Product, goal_problem
from reinforge.envs.webshop.reward import RewardParts, purchase_reward

_ACTION = re.compile(r"^\s*(\w+)\s*\[(.*)\]\s*$", re.DOTALL)


class WebShopEnv(Protocol):
    """What a WebShop workflow needs of an environment (the real one has all of it)."""

    observation: str

    def reset(self, session: Any = None) -> Any: ...

    def get_available_actions(self) -> dict[str, Any]: ...

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]: ...

    def close(self) -> None: ...


def split_action(action: str) -> tuple[str, str | None]:
    """``"click[Buy Now]"`` → ``("click", "Buy Now")``; no brackets → ``(action, None)``."""
    match = _ACTION.match(action or "")
    if match is None:
        return (action or "").strip(), None
    return match.group(1).strip().lower(), match.group(2).strip()


class CatalogueWebShopEnv:
    """The WebShop site over a catalogue (see the module docstring); one session at a time."""

    def __init__(self, catalogue: Catalogue | None = None) -> None:
        self.catalogue = catalogue or Catalogue.default()
        self.goal: dict[str, Any] | None = None
        self.observation = ""
        self.closed = False
        self.last_purchase: RewardParts | None = None

    # ---- the interface -----------------------------------------------------------------

    def reset(self, session: Any = None) -> tuple[str, None]:
        """Start a session for goal number ``session`` (default 0) or a goal object."""
        self._check_open()
        goal = self.catalogue.goal(int(session or 0)) if not isinstance(session, dict) else session
        problem = goal_problem(goal)
        if problem:
            raise ValueError(f"bad WebShop goal: {problem}")
        self.catalogue.product(str(goal["asin"]))  # the goal's own product must exist
        self.goal = goal
        self.page = "search"
        self.results: list[str] = []
        self.result_page = 1
        self.asin: str | None = None
        self.chosen: dict[str, str] = {}
        self.detail = ""
        self.done = False
        self.last_purchase = None
        self.observation = pages.search_page(self.instruction)
        return self.observation, None

    @property
    def instruction(self) -> str:
        return str((self.goal or {}).get("instruction_text", ""))

    def get_available_actions(self) -> dict[str, Any]:
        return {"has_search_bar": self.page == "search", "clickables": self._clickables()}

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        self._check_open()
        if self.goal is None or self.done:
            raise RuntimeError("the WebShop session is over (or never started): call reset()")
        name, arg = split_action(action)
        if name == "search" and arg and self.page == "search":
            self._search(arg)
        elif name == "click" and arg is not None and arg.lower() in self._clickables():
            reward = self._click(arg.lower())
            if self.done:
                return self.observation, reward, True, {"valid": True}
        else:
            return self._invalid(), 0.0, False, {"valid": False}
        return self.observation, 0.0, False, {"valid": True}

    def close(self) -> None:
        self.closed = True

    # ---- the site ----------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("the WebShop environment is closed")

    def _product(self) -> Product:
        assert self.asin is not None
        return self.catalogue.product(self.asin)

    def _clickables(self) -> list[str]:
        if self.page == "search":
            return [pages.SEARCH.lower()]
        out = [pages.BACK.lower()]
        if self.page == "results":
            if self.result_page > 1:
                out.append(pages.PREV.lower())
            if self.result_page * pages.PAGE_SIZE < len(self.results):
                out.append(pages.NEXT.lower())
            start = (self.result_page - 1) * pages.PAGE_SIZE
            out += [a.lower() for a in self.results[start : start + pages.PAGE_SIZE]]
        elif self.page == "item":
            out.append(pages.PREV.lower())
            for values in self._product().options.values():
                out += [v.lower() for v in values if v.lower() not in out]
            out += [d.lower() for d in pages.DETAILS] + [pages.BUY.lower()]
        else:
            out.append(pages.PREV.lower())
        return out

    def _render(self, prefix: str = "") -> None:
        if self.page == "search":
            text = pages.search_page(self.instruction)
        elif self.page == "results":
            text = pages.results_page(
                self.instruction, self.results, self.catalogue.products, self.result_page
            )
        elif self.page == "item":
            text = pages.item_page(self.instruction, self._product(), self.chosen)
        else:
            text = pages.detail_page(self.instruction, self._product(), self.detail)
        self.observation = prefix + text

    def _search(self, query: str) -> None:
        self.results = self.catalogue.search(query)
        self.result_page = 1
        self.page = "results"
        self._render()

    def _click(self, label: str) -> float:
        if label == pages.BACK.lower():
            self.page, self.chosen = "search", {}
        elif label == pages.NEXT.lower():
            self.result_page += 1
        elif label == pages.PREV.lower():
            if self.page == "results":
                self.result_page -= 1
            else:
                self.page = "results" if self.page == "item" else "item"
                if self.page == "results":
                    self.chosen = {}
        elif self.page == "results":
            self.asin, self.page, self.chosen = label.upper(), "item", {}
        elif label == pages.BUY.lower():
            return self._buy()
        elif label in (d.lower() for d in pages.DETAILS):
            self.page, self.detail = "detail", label.capitalize()
        else:
            self._choose(label)
            self._render(prefix=f"You have clicked {label}.\n")
            return 0.0
        self._render()
        return 0.0

    def _choose(self, label: str) -> None:
        for name, values in self._product().options.items():
            for value in values:
                if value.lower() == label:
                    self.chosen[name] = value
                    return

    def _buy(self) -> float:
        assert self.goal is not None
        parts = purchase_reward(self._product(), self.chosen, self.goal)
        self.last_purchase = parts
        self.done = True
        self.observation = pages.done_page(self._product().asin, self.chosen, parts.reward)
        return parts.reward

    def _invalid(self) -> str:
        return "Invalid action. The page has not changed. Valid actions now: " + ", ".join(
            valid_action_texts(self.get_available_actions())
        )


def valid_action_texts(available: dict[str, Any]) -> list[str]:
    """The actions an agent may write on a page, e.g. ``search[<query>]``, ``click[buy now]``."""
    out = ["search[<your query>]"] if available.get("has_search_bar") else []
    return out + [f"click[{c}]" for c in available.get("clickables", []) if c != "search"]


def make_env(kind: str = "catalogue", **env_args: Any) -> WebShopEnv:
    """The environment named by ``kind``.

    * ``"catalogue"`` (default): ``CatalogueWebShopEnv`` over the shipped catalogue,
      or over ``catalogue_dir`` (a folder with ``products.jsonl`` and ``goals.jsonl``);
    * ``"web_agent_site"``: the real WebShop (``princeton-nlp/WebShop`` installed,
      with its product files, search index and spaCy model), through
      ``gym.make("WebAgentTextEnv-v0", observation_mode="text_rich", ...)``;
      ``env_args`` go to ``gym.make`` (e.g. ``num_products``, ``human_goals``);
    * ``"package.module:factory"`` or ``"package.module.factory"``: a callable
      taking ``env_args`` and returning an object with the interface above.
    """
    if kind == "catalogue":
        folder = env_args.pop("catalogue_dir", None)
        if env_args:
            raise ValueError(f"unknown catalogue env_args {sorted(env_args)}; use catalogue_dir")
        return CatalogueWebShopEnv(Catalogue.from_dir(folder) if folder else None)
    if kind == "web_agent_site":
        return _real_webshop(**env_args)
    module, _, attr = kind.replace(":", ".").rpartition(".")
    if not module:
        raise ValueError(
            f"unknown WebShop env {kind!r}: use 'catalogue', 'web_agent_site' or a dotted path"
        )
    factory = getattr(importlib.import_module(module), attr)
    return factory(**env_args)


def _real_webshop(**env_args: Any) -> WebShopEnv:
    try:
        import gym  # type: ignore[import-not-found]
        import web_agent_site.envs  # type: ignore[import-not-found]  # noqa: F401
    except ImportError as err:
        raise ImportError(
            f"the real WebShop is not installed ({err}); install princeton-nlp/WebShop "
            "(see docs/workflows.md#webshop) or use env: catalogue"
        ) from err
    settings = {"observation_mode": "text_rich", "num_products": None, "human_goals": True}
    return gym.make("WebAgentTextEnv-v0", **{**settings, **env_args})
