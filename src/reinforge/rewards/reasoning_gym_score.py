"""reasoning-gym's own scorers, one cached instance per dataset name.

Kept apart from the reward class so that a timeout worker can import it (and
reasoning-gym, about a second of start-up) without the rest of reinforge, and so
that ``import reinforge.rewards`` does not import reasoning-gym at all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_scorers: dict[str, Callable[[str | None, dict[str, Any]], float]] = {}
_lock = threading.Lock()


def get_scorer(dataset_name: str) -> Callable[[str | None, dict[str, Any]], float]:
    """The ``score_answer`` of dataset ``dataset_name``, built once per process."""
    with _lock:
        scorer = _scorers.get(dataset_name)
        if scorer is None:
            from reinforge.core.optional import require

            factory = require("reasoning_gym.factory", "reasoning-gym", "reasoning_gym_reward")
            scorer = factory.get_score_answer_fn(dataset_name)
            _scorers[dataset_name] = scorer
        return scorer


def score_answer(dataset_name: str, answer: str | None, entry: dict[str, Any]) -> float:
    """Score ``answer`` for the reasoning-gym ``entry`` with its dataset's scorer."""
    return float(get_scorer(dataset_name)(answer, entry))
