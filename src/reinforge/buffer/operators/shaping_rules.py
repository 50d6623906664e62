"""The terms ``reward_shaping_mapper`` sums into a new reward, parsed from config dicts.

Each rule is a dict; ``kind`` defaults to ``metric``:

* ``{"metric": "accuracy", "weight": 1.0, "default": 0.0}`` adds
  ``weight * exp.metrics["accuracy"]``. A missing metric uses ``default``; without a
  default it is an error (a silent 0 would hide a broken reward function).
* ``{"kind": "reward", "weight": 1.0}`` adds ``weight * exp.reward`` (keep the
  original reward and add bonuses on top). A missing/NaN reward is an error.
* ``{"kind": "length_penalty", "coef": 0.001, "max_len": 512}`` subtracts
  ``coef * max(0, n - max_len)`` where ``n`` is the number of tokens the model
  generated (action tokens, so tool output in multi-turn runs is not penalised).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reinforge.core import Experience


@dataclass(frozen=True)
class MetricTerm:
    """``weight * exp.metrics[metric]`` (``default`` when the metric is missing)."""

    metric: str
    weight: float = 1.0
    default: float | None = None

    def value(self, exp: Experience) -> float:
        raw = exp.metrics.get(self.metric, self.default)
        if raw is None:
            raise KeyError(
                f"experience {exp.eid} has no metric '{self.metric}' "
                f"(has {sorted(exp.metrics)}); give the rule a 'default' to allow that"
            )
        return self.weight * float(raw)


@dataclass(frozen=True)
class RewardTerm:
    """``weight * exp.reward``: the reward the workflow assigned."""

    weight: float = 1.0

    def value(self, exp: Experience) -> float:
        reward = None if exp.reward is None else float(exp.reward)
        if reward is None or not math.isfinite(reward):
            raise ValueError(f"experience {exp.eid} has no finite reward ({exp.reward!r})")
        return self.weight * reward


@dataclass(frozen=True)
class LengthPenalty:
    """``-coef * max(0, generated_tokens - max_len)``."""

    coef: float
    max_len: int = 0

    def __post_init__(self) -> None:
        if self.coef < 0 or self.max_len < 0:
            raise ValueError(f"length_penalty needs coef >= 0 and max_len >= 0, got {self}")

    def value(self, exp: Experience) -> float:
        generated = int(exp.action_mask.sum())
        return -self.coef * max(0, generated - self.max_len)


ShapingTerm = MetricTerm | RewardTerm | LengthPenalty

_KINDS: dict[str, type[ShapingTerm]] = {
    "metric": MetricTerm,
    "reward": RewardTerm,
    "length_penalty": LengthPenalty,
}


def parse_rule(rule: Mapping[str, Any] | ShapingTerm) -> ShapingTerm:
    """One shaping term from its config dict (see the module docstring)."""
    if isinstance(rule, MetricTerm | RewardTerm | LengthPenalty):
        return rule
    if not isinstance(rule, Mapping):
        raise TypeError(f"a shaping rule must be a dict, got {type(rule).__name__}: {rule!r}")
    fields = dict(rule)
    kind = fields.pop("kind", "metric")
    cls = _KINDS.get(kind)
    if cls is None:
        raise ValueError(f"unknown shaping rule kind '{kind}'; known: {sorted(_KINDS)}")
    try:
        return cls(**fields)
    except TypeError as exc:
        raise ValueError(f"bad '{kind}' shaping rule {dict(rule)!r}: {exc}") from exc
