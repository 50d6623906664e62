"""The WebShop site over the shipped catalogue: search, pages, buttons, purchase, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reinforge.envs.webshop import Catalogue, CatalogueWebShopEnv, make_env
from reinforge.envs.webshop.catalogue import MAX_RESULTS, fts_any
from reinforge.envs.webshop.env import split_action

DATA = Path(__file__).resolve().parents[3] / "src/reinforge/envs/webshop/data"


def _env(goal: int = 0) -> CatalogueWebShopEnv:
    env = CatalogueWebShopEnv()
    env.reset(session=goal)
    return env


def test_shipped_catalogue_is_small_and_consistent() -> None:
    """(That the files are the offline generator's output: tests/tools/test_webshop_catalogue.py.)"""
    assert sum(p.stat().st_size for p in DATA.iterdir()) < 500_000
    catalogue = Catalogue.default()
    assert len(catalogue.products) == 300 and len(catalogue.goals) == 300
    assert all(g["asin"] in catalogue.products for g in catalogue.goals)
    assert all(g["price_upper"] >= catalogue.product(g["asin"]).price for g in catalogue.goals)


def test_bm25_search_ranks_the_described_product_first_for_most_goals() -> None:
    catalogue = Catalogue.default()
    top = [catalogue.search(g["instruction_text"])[:10] for g in catalogue.goals]
    found = sum(g["asin"] in hits for g, hits in zip(catalogue.goals, top, strict=True))
    assert found / len(top) > 0.9
    assert len(catalogue.search("deodorant")) <= MAX_RESULTS
    assert catalogue.search("!!!") == []
    assert fts_any('a "b" OR c') == '"a" OR "b" OR "or" OR "c"'


def test_a_whole_purchase_through_the_pages() -> None:
    env = _env(0)
    goal = env.goal
    assert env.observation.startswith("WebShop\nInstruction:")
    assert env.get_available_actions() == {"has_search_bar": True, "clickables": ["search"]}
    obs, reward, done, info = env.step("search[slim fit wireless charging phone case]")
    assert (reward, done, info["valid"]) == (0.0, False, True)
    assert "Page 1 (Total results: " in obs and "[button] Next > [button_]" in obs
    clickables = env.get_available_actions()["clickables"]
    assert clickables[:2] == ["back to search", "next >"] and goal["asin"].lower() in clickables
    env.step("click[Next >]")
    assert "Page 2" in env.observation and "< prev" in env.get_available_actions()["clickables"]
    env.step("click[< Prev]")
    env.step(f"click[{goal['asin'].lower()}]")  # labels are case-insensitive
    assert "[button] Buy Now [button_]" in env.observation
    env.step("click[Features]")
    assert env.get_available_actions()["clickables"] == ["back to search", "< prev"]
    env.step("click[< Prev]")
    for value in goal["goal_options"].values():
        obs, *_ = env.step(f"click[{value}]")
        assert obs.startswith(f"You have clicked {value}.")
        assert f"[clicked button] {value} [clicked button_]" in obs
    obs, reward, done, _ = env.step("click[Buy Now]")
    assert done and reward == 1.0 and "Your score (min 0.0, max 1.0): 1.00" in obs
    with pytest.raises(RuntimeError, match="session is over"):
        env.step("click[Buy Now]")


def test_an_invalid_action_leaves_the_page_and_lists_the_valid_ones() -> None:
    env = _env(1)
    before = env.observation
    obs, reward, done, info = env.step("click[Buy Now]")
    assert (reward, done, info["valid"]) == (0.0, False, False)
    assert env.observation == before
    assert "Valid actions now: search[<your query>]" in obs
    env.step("search[headphones]")
    obs, *_ = env.step("search[again]")  # no search bar on a results page
    assert "click[back to search]" in obs


def test_back_to_search_forgets_the_chosen_options() -> None:
    env = _env(0)
    env.step("search[phone case]")
    env.step(f"click[{env.goal['asin']}]")
    env.step(f"click[{next(iter(env.goal['goal_options'].values()))}]")
    env.step("click[Back to Search]")
    assert env.get_available_actions()["has_search_bar"] and env.chosen == {}


def test_bad_goals_and_a_closed_env() -> None:
    env = CatalogueWebShopEnv()
    with pytest.raises(KeyError, match="no goal 300"):
        env.reset(session=300)
    with pytest.raises(KeyError, match="unknown product 'B0NOSUCH00'"):
        env.reset(session={"asin": "B0NOSUCH00", "instruction_text": "x", "price_upper": 1})
    with pytest.raises(ValueError, match="goal lacks"):
        env.reset(session={"asin": "B0NOSUCH00"})
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.reset(session=0)


def test_split_action() -> None:
    assert split_action("click[Buy Now]") == ("click", "Buy Now")
    assert split_action(" Search[ red shoes ] ") == ("search", "red shoes")
    assert split_action("buy it") == ("buy it", None)


def built(**kwargs):
    return ("built", kwargs)


def test_make_env_kinds(tmp_path: Path) -> None:
    assert isinstance(make_env(), CatalogueWebShopEnv)
    products = [json.loads(x) for x in (DATA / "products.jsonl").read_text().splitlines()]
    for name, rows in (("products", products[:30]), ("goals", [])):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = make_env("catalogue", catalogue_dir=str(tmp_path))
    assert len(env.catalogue.products) == 30
    assert make_env(f"{__name__}:built", a=1) == ("built", {"a": 1})
    with pytest.raises(ImportError, match="real WebShop is not installed"):
        make_env("web_agent_site")
    with pytest.raises(ValueError, match="unknown WebShop env"):
        make_env("nonsense")
    with pytest.raises(ValueError, match="catalogue_dir"):
        make_env("catalogue", num_products=3)


class TextEnvShaped:
    """The catalogue site behind the surface of WebShop's ``WebAgentTextEnv``, as its
    source (princeton-nlp/WebShop, ``web_agent_site/envs/web_agent_text_env.py``)
    defines it: built by ``gym.make`` with keyword arguments; ``reset(session=None,
    instruction_text=None)`` returns ``(observation, None)``; ``observation`` is a
    read-only property; ``step`` returns ``(observation, reward, done, None)`` (its
    ``info`` is always None); ``get_available_actions()`` gives ``has_search_bar`` and
    lower-cased ``clickables``; ``close()`` does nothing. Not the real environment
    (that needs its million-product index): only its interface."""

    def __init__(self, observation_mode: str = "html", **kwargs) -> None:
        assert observation_mode == "text_rich"
        self.kwargs = kwargs
        self._site = CatalogueWebShopEnv()
        self.closed = False

    @property
    def observation(self) -> str:
        return self._site.observation

    def reset(self, session=None, instruction_text=None):
        self._site.reset(session=session)
        return self.observation, None

    def get_available_actions(self) -> dict:
        return self._site.get_available_actions()

    def step(self, action: str):
        observation, reward, done, _ = self._site.step(action)
        return observation, reward, done, None

    def close(self) -> None:
        self.closed = True


def test_web_agent_site_drives_an_env_with_the_real_text_envs_interface(
    monkeypatch: pytest.MonkeyPatch, shopper
) -> None:
    """``env: web_agent_site`` asks gym for ``WebAgentTextEnv-v0`` as Trinity-RFT does,
    and the workflow plays a whole episode through that interface (None ``info``,
    read-only ``observation``, the ``reset`` tuple) to the purchase. The real WebShop
    is not installed here: gym and the package are stand-ins (see ``TextEnvShaped``)."""
    import asyncio
    import sys
    import types

    from reinforge.core import Task
    from reinforge.models import ModelWrapper
    from reinforge.models.engines.mock import MockEngine

    made: list[tuple[str, dict, TextEnvShaped]] = []

    def gym_make(name: str, **kwargs):
        env = TextEnvShaped(**kwargs)
        made.append((name, kwargs, env))
        return env

    gym = types.ModuleType("gym")
    gym.make = gym_make  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gym", gym)
    monkeypatch.setitem(sys.modules, "web_agent_site", types.ModuleType("web_agent_site"))
    monkeypatch.setitem(sys.modules, "web_agent_site.envs", types.ModuleType("web_agent_site.envs"))
    task = Task(
        workflow="webshop_workflow",
        raw_task={"session_id": 3},
        workflow_args={
            "max_env_steps": 8,
            "env": "web_agent_site",
            "env_args": {"num_products": 1000},
        },
    )
    model = ModelWrapper(
        MockEngine(replies=shopper("buy_target"), max_model_len=65536), enable_history=True
    )
    (exp,) = asyncio.run(task.to_workflow(model).run_async())
    ((name, kwargs, env),) = made
    assert name == "WebAgentTextEnv-v0"
    assert kwargs == {"observation_mode": "text_rich", "num_products": 1000, "human_goals": True}
    assert exp.info["termination_reason"] == "env_done" and exp.reward == 1.0
    assert env.closed
