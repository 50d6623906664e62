"""The WebShop catalogue: products and goals, and a BM25 search index over the products.

WebShop searches its products with BM25 (Pyserini, on a Java server). Here the same
ranking comes from SQLite's FTS5 ``bm25()``, over the product's title, category,
attributes, description and features, built once per process into a temporary
database; every thread then reads it through its own read-only connection, as the
email search agent's mailbox does. A query's words are OR-ed (BM25 ranks the
products holding more of the rarer words first), at most ``MAX_RESULTS`` come back,
best first.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import tempfile
import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

#: WebShop shows at most 50 results for a search (five pages of ten)
MAX_RESULTS = 50

_SCHEMA = """
CREATE TABLE products (id INTEGER PRIMARY KEY, asin TEXT NOT NULL UNIQUE);
CREATE VIRTUAL TABLE products_fts USING fts5(
    name, category, attributes, description, features, tokenize='porter unicode61'
);
"""

_WORD = re.compile(r"[A-Za-z0-9]+")


@dataclass(frozen=True)
class Product:
    """One product as the generator (or WebShop's ``items_shuffle.json``) describes it."""

    asin: str
    name: str
    query: str
    product_category: str
    price: float
    attributes: list[str] = field(default_factory=list)
    options: dict[str, list[str]] = field(default_factory=dict)
    description: str = ""
    features: list[str] = field(default_factory=list)
    rating: str = "N.A."
    reviews: list[str] = field(default_factory=list)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Product:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in row.items() if k in known})


def goal_problem(goal: Any) -> str | None:
    """Why ``goal`` is not a usable shopping goal, or None when it is."""
    if not isinstance(goal, dict):
        return f"a goal is an object, got {type(goal).__name__}"
    missing = [k for k in ("asin", "instruction_text", "price_upper") if k not in goal]
    if missing:
        return f"goal lacks {missing} (keys: {sorted(goal)})"
    if not isinstance(goal.get("attributes", []), list):
        return "goal attributes must be a list"
    if not isinstance(goal.get("goal_options", {}), dict):
        return "goal_options must map option names to values"
    return None


def fts_any(query: str) -> str | None:
    """An FTS5 query matching rows holding any word of ``query`` (words quoted, so
    operators and punctuation are plain text); None when it has no words."""
    words = _WORD.findall(query.lower())
    if not words:
        return None
    return " OR ".join(f'"{w}"' for w in dict.fromkeys(words))


def _load_jsonl(lines: Iterable[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines if line.strip()]


def _package_rows(name: str) -> list[dict[str, Any]]:
    text = resources.files(__package__).joinpath("data").joinpath(name).read_text("utf-8")
    return _load_jsonl(text.splitlines())


class Catalogue:
    """Products by ASIN, goals by number, and ``search(query)``; read-only once built."""

    _default: Catalogue | None = None
    _default_lock = threading.Lock()

    def __init__(self, products: list[dict[str, Any]], goals: list[dict[str, Any]]) -> None:
        self.products = {row["asin"]: Product.from_row(row) for row in products}
        self.goals = list(goals)
        self._tmpdir = tempfile.mkdtemp(prefix="reinforge-webshop-")
        self.db_path = Path(self._tmpdir) / "products.db"
        try:
            self._build()
        except BaseException:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            raise
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(
            self, Catalogue._release, self._connections, self._lock, self._tmpdir
        )

    @classmethod
    def from_dir(cls, folder: str | Path) -> Catalogue:
        """A catalogue from ``products.jsonl`` and ``goals.jsonl`` in ``folder``."""
        folder = Path(folder)
        with open(folder / "products.jsonl", encoding="utf-8") as fh:
            products = _load_jsonl(fh)
        with open(folder / "goals.jsonl", encoding="utf-8") as fh:
            goals = _load_jsonl(fh)
        return cls(products, goals)

    @classmethod
    def default(cls) -> Catalogue:
        """The catalogue shipped with the package (``data/``), built once per process."""
        with cls._default_lock:
            if cls._default is None:
                cls._default = cls(_package_rows("products.jsonl"), _package_rows("goals.jsonl"))
            return cls._default

    def _build(self) -> None:
        conn = sqlite3.connect(self.db_path)
        try:
            with conn:
                conn.executescript(_SCHEMA)
                for product in self.products.values():
                    cur = conn.execute("INSERT INTO products (asin) VALUES (?)", (product.asin,))
                    conn.execute(
                        "INSERT INTO products_fts (rowid, name, category, attributes, "
                        "description, features) VALUES (?, ?, ?, ?, ?, ?)",
                        (
                            cur.lastrowid,
                            product.name,
                            product.product_category,
                            " ; ".join(product.attributes),
                            product.description,
                            " ".join(product.features),
                        ),
                    )
        finally:
            conn.close()

    def _conn(self) -> sqlite3.Connection:
        if not self._finalizer.alive:
            raise RuntimeError("the catalogue is closed")
        conn = getattr(self._local, "conn", None)
        if conn is None:
            uri = f"{self.db_path.resolve().as_uri()}?mode=ro"
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            with self._lock:
                self._connections.append(conn)
            self._local.conn = conn
        return conn

    @staticmethod
    def _release(connections: list[sqlite3.Connection], lock: threading.Lock, tmpdir: str) -> None:
        with lock:
            for conn in connections:
                conn.close()
            connections.clear()
        shutil.rmtree(tmpdir, ignore_errors=True)

    def close(self) -> None:
        """Close every thread's connection and remove the index."""
        self._finalizer()

    def search(self, query: str, limit: int = MAX_RESULTS) -> list[str]:
        """The ASINs of the products best matching ``query`` under BM25, best first."""
        match = fts_any(query)
        if match is None:
            return []
        rows = self._conn().execute(
            "SELECT p.asin FROM products_fts JOIN products p ON p.id = products_fts.rowid "
            "WHERE products_fts MATCH ? ORDER BY bm25(products_fts), p.id LIMIT ?",
            (match, limit),
        )
        return [row[0] for row in rows]

    def goal(self, index: int) -> dict[str, Any]:
        """Goal number ``index`` (WebShop's session id)."""
        if not 0 <= index < len(self.goals):
            raise KeyError(f"no goal {index}: the catalogue has goals 0..{len(self.goals) - 1}")
        return self.goals[index]

    def product(self, asin: str) -> Product:
        """The product with this ASIN (KeyError naming it when there is none)."""
        try:
            return self.products[asin.upper()]
        except KeyError:
            raise KeyError(f"unknown product {asin!r}: not in the catalogue") from None
