"""A bounded, thread-safe cache of judge verdicts keyed by (judge, request)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from typing import Any


def request_key(judge: str, payload: dict[str, Any]) -> str:
    """A stable key for one judge request (the judge's name and the full request body)."""
    text = json.dumps([judge, payload], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class VerdictCache:
    """Least-recently-used verdicts, so a repeated group costs no judge call."""

    def __init__(self, max_entries: int = 20_000) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.hits += 1
                return self._items[key]
            self.misses += 1
            return None

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)
