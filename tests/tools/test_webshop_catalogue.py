"""The offline WebShop catalogue generator (tools/webshop_catalogue.py) rebuilds the shipped files."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "src/reinforge/envs/webshop/data"


def _tool():
    spec = importlib.util.spec_from_file_location(
        "webshop_catalogue", ROOT / "tools/webshop_catalogue.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_shipped_catalogue_is_the_generators_output(tmp_path: Path) -> None:
    tool = _tool()
    tool.main(["--out", str(tmp_path), "--seed", "0"])
    assert _rows(tmp_path / "products.jsonl") == _rows(DATA / "products.jsonl")
    assert _rows(tmp_path / "goals.jsonl") == _rows(DATA / "goals.jsonl")
    assert tool.DATA.resolve() == DATA.resolve()  # its default --out is the package's data


def test_another_seed_draws_another_catalogue_of_the_same_shape() -> None:
    products, goals = _tool().generate(1)
    assert len(products) == len(goals) == 300
    assert products != _rows(DATA / "products.jsonl")
    assert {p["asin"] for p in products} >= {g["asin"] for g in goals}
    assert all(
        g["price_upper"] >= next(p for p in products if p["asin"] == g["asin"])["price"]
        for g in goals
    )
