"""``reward_shaping_mapper``: rebuild each reward as a weighted sum of shaping terms."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any

from reinforge.buffer.operators.base import ExperienceOperatorV1, OperatorResult
from reinforge.buffer.operators.registry import EXPERIENCE_OPERATORS
from reinforge.buffer.operators.reward_utils import valid_reward
from reinforge.buffer.operators.shaping_rules import ShapingTerm, parse_rule
from reinforge.core import Experience

NAME = "reward_shaping_mapper"


@EXPERIENCE_OPERATORS.register_module(NAME)
class RewardShapingMapper(ExperienceOperatorV1):
    """Sets ``exp.reward = sum(rule(exp) for rule in rules)``.

    ``rules`` are dicts described in ``shaping_rules`` (metric terms, the original
    reward, a length penalty), e.g.
    ``[{"kind": "reward"}, {"metric": "format_ok", "weight": 0.1},
    {"kind": "length_penalty", "coef": 1e-3, "max_len": 1024}]``.
    The reward before the first shaping is kept in ``exp.info["original_reward"]``.
    All new rewards are computed before any is written, so a failing rule leaves
    the batch untouched.
    """

    def __init__(self, rules: Sequence[Mapping[str, Any] | ShapingTerm]) -> None:
        if isinstance(rules, Mapping) or not rules:
            raise ValueError("rules must be a non-empty list of shaping rules")
        self.rules: list[ShapingTerm] = [parse_rule(rule) for rule in rules]

    async def process(self, exps: list[Experience]) -> OperatorResult:
        before = [r for e in exps if (r := valid_reward(e)) is not None]
        shaped = [sum(rule.value(exp) for rule in self.rules) for exp in exps]
        for exp, reward in zip(exps, shaped, strict=True):
            exp.info.setdefault("original_reward", exp.reward)
            exp.reward = float(reward)
        return exps, {
            f"{NAME}/reward_before/mean": fmean(before) if before else 0.0,
            f"{NAME}/reward_after/mean": fmean(shaped) if shaped else 0.0,
        }
